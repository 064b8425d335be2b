"""PyTorch's log-sigmoid and logaddexp, and their gradients, at the points examples/custom_op.cpp checks.

Run with any Python that has torch:  python3 examples/custom_op_reference.py
It prints the C++ lines that examples/custom_op.cpp holds, pasted as printed (the log-sigmoid
block, then the logaddexp block). The inputs are float32 values; torch evaluates each op and its
gradient on them in float64, so the printed values are the true answers to 9 digits, and the C++
tolerance only has to cover our float32 error.
"""
import torch
import torch.nn.functional as F

x = torch.tensor([-100.0, -20.0, -5.0, -1.0, -0.25, 0.0, 0.25, 1.0, 5.0, 20.0], dtype=torch.float32)
x64 = x.double().requires_grad_()
y = F.logsigmoid(x64)
y.sum().backward()  # d sum(log_sigmoid(x)) / dx_i = sigmoid(-x_i)


def cpp_floats(name, values):
    def literal(v):
        if abs(v) < 2.0 ** -150:  # below half the smallest float: the float nearest is 0
            v = 0.0
        s = f"{v:.9g}"
        return (s if any(c in s for c in ".e") else s + ".0") + "f"
    items = [literal(v) for v in values.tolist()]
    rows = [", ".join(items[i:i + 5]) for i in range(0, len(items), 5)]
    return f"  const std::vector<float> {name} = {{\n      " + ",\n      ".join(rows) + "};"


# Indented as they stand in main().
print(f"  // From examples/custom_op_reference.py (torch {torch.__version__.split('+')[0]}, float64).")
print(cpp_floats("kX", x))
print(cpp_floats("kLogSigmoid", y.detach()))
print(cpp_floats("kSigmoidNegX", x64.grad))

# logaddexp(a, b) = log(e^a + e^b): far apart (e^100 would overflow a float), close, equal, of
# either sign; |z| <= 8.3 apart from the first pair, whose z = 100 is exact.
a = torch.tensor([-100.0, -2.0, -3.0, -1.0, 0.0, 0.0, 0.5, 2.0, 3.0, 7.0], dtype=torch.float32)
b = torch.tensor([100.0, -2.5, 4.0, -1.0, 0.0, 1e-3, -0.5, 1.0, 2.5, 8.0], dtype=torch.float32)
a64, b64 = a.double().requires_grad_(), b.double().requires_grad_()
z = torch.logaddexp(a64, b64)
z.sum().backward()  # d/da = e^(a-z), d/db = e^(b-z)
print(f"  // From examples/custom_op_reference.py (torch {torch.__version__.split('+')[0]}, float64).")
print(cpp_floats("kA", a))
print(cpp_floats("kB", b))
print(cpp_floats("kLogAddExp", z.detach()))
print(cpp_floats("kDA", a64.grad))
print(cpp_floats("kDB", b64.grad))
