#!/usr/bin/env python3
"""Writes the committed seed corpora, fuzz/corpus/<target>/, from nothing.

Small, valid (or nearly valid) examples of each format, made here so that no
dataset is copied into the repository; scripts/fuzz.sh adds real files from
../shared/data when it is present. Deterministic: running it again rewrites
the same bytes. (The SentencePiece seed, fuzz/corpus/subword/tiny.model, was
written once by SentencePiece's trainer on six short sentences, BPE with 40
pieces and --normalization_rule_name=identity so that it is 499 bytes rather
than 240 KB; Python's standard library cannot make one. Nor a JPEG: the seed
fuzz/corpus/image_folder/gradient32.jpg was written once by stb_image_write,
stbi_write_jpg at quality 90, of the 32×32 RGB image whose value at (x, y),
channel c is (7x + 3y + 60c) mod 256.)

    python3 fuzz/make_seeds.py
"""
import gzip
import io
import json
import lzma
import os
import random
import struct
import tarfile
import zipfile
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def png(width, height, channels, seed):
    """A PNG of a smooth gradient (it compresses to a few hundred bytes), filter type 0 rows."""
    rows = b"".join(b"\0" + bytes((x * 8 + y * 4 + 40 * seed) % 256 for x in range(width) for _ in range(channels))
                    for y in range(height))
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    color = {1: 0, 3: 2, 4: 6}[channels]
    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def npy(descr, shape, payload, major=1):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    length_bytes = 2 if major == 1 else 4
    pad = (64 - (8 + length_bytes + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode()
    length = struct.pack("<H" if major == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + length + header + payload


def safetensors(tensors, metadata):
    header, data = {"__metadata__": metadata}, b""
    for name, (shape, values) in tensors.items():
        raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def archive_members():
    return [("train/c%d/%d.png" % (c, c), png(32, 32, 3, c)) for c in range(10)]


def tar_bytes(mode):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode, format=tarfile.USTAR_FORMAT) as tar:
        for name, data in archive_members():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def main():
    rng = random.Random(26)
    # CIFAR-10 binary batches: records of a label byte and 3,072 pixel bytes.
    records = b"".join(bytes([label]) + bytes(rng.randrange(256) for _ in range(3072)) for label in (3, 9))
    put("cifar_binary", "two_records.bin", records)
    put("cifar_binary", "one_record_bad_label.bin", bytes([10]) + records[1:3073])

    put("image_folder", "rgb32.png", png(32, 32, 3, 1))
    put("image_folder", "gray32.png", png(32, 32, 1, 2))
    put("image_folder", "rgba32.png", png(32, 32, 4, 3))
    put("image_folder", "rgb8.png", png(8, 8, 3, 4))

    put("archive", "images.tar", tar_bytes("w"))
    put("archive", "images.tar.gz", gzip.compress(tar_bytes("w"), mtime=0))
    put("archive", "images.tar.xz", lzma.compress(tar_bytes("w")))
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in archive_members():
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    put("archive", "images.zip", zipped.getvalue())

    put("npy", "f4_3x2.npy", npy("<f4", "(3, 2)", struct.pack("<6f", *range(6))))
    put("npy", "f2_2x2.npy", npy("<f2", "(2, 2)", struct.pack("<4e", 0.5, -1.0, 65504.0, 6e-8)))
    put("npy", "f4_v2.npy", npy("<f4", "(1, 3)", struct.pack("<3f", 1, 2, 3), major=2))
    put("npy", "f8_vector.npy", npy("<f8", "(2,)", struct.pack("<2d", 1, 2)))

    put("deepmind_question", "cnn.question",
        "http://www.cnn.com/2015/story\n\n"
        "@entity1 met @entity2 in @entity3 . they talked . @entity2 left for @entity4 . the rain stopped . "
        "nobody knew . @entity1 stayed .\n\n"
        "@placeholder left for @entity4\n\n@entity2\n\n"
        "@entity1:Ann Smith\n@entity2:Bob\n@entity3:Paris\n@entity4:Rome\n")

    put("babi", "qa1.txt",
        "1 Mary moved to the bathroom.\n2 John went to the hallway.\n3 Where is Mary? \tbathroom\t1\n"
        "4 Daniel went back to the hallway.\n5 Where is Daniel? \thallway\t4\n"
        "1 Sandra journeyed to the garden.\n2 Is Sandra in the garden? \tyes\t1\n")

    context = "".join("%d Tom saw Alice near the river and Bob waved .\n" % i for i in range(1, 21))
    put("cbt", "questions.txt", context + "21 Then XXXXX ran home .\tAlice\t\tAlice|Bob|Tom|river\n\n")
    put("cbt", "book.txt",
        "_BOOK_TITLE_ : The_River.txt.out\n" +
        "".join("Then Tom saw Alice and Bob near the Mill %d .\n" % i for i in range(8)))

    source, target = "Ein Hund läuft .\nZwei Katzen schlafen .\n", "A dog runs .\nTwo cats sleep .\n"
    put("parallel_text", "plain", struct.pack(">H", len(source.encode())) + (source + target).encode())
    zs, zt = gzip.compress(source.encode(), mtime=0), gzip.compress(target.encode(), mtime=0)
    put("parallel_text", "gzipped", struct.pack(">H", len(zs)) + zs + zt)

    progress = {"format": "rmsgrad training checkpoint 1", "step": "12", "epoch": "1", "best_metric": "-1",
                "train_seconds": "3.5", "config": "{}"}
    put("checkpoint", "training.safetensors",
        safetensors({"param.w": ([2, 3], [0.5] * 6), "optim.w.m": ([2, 3], [0.0] * 6)}, progress))
    put("checkpoint", "scalar.safetensors", safetensors({"param.w": ([], [1.0])}, {}))

    put("config", "settings.toml", 'lr = 0.1\nsteps = 20\nnorm = "layernorm"\nsizes = [3, 4]\nverbose = true\n'
        '[section]\nseed = 7\n')
    put("config", "settings.ini", "; a comment\nlr=0.5\nthreads=1\n[run]\nlog-every=5\n")
    put("config", "config.json", json.dumps({"seed": 0, "threads": 1, "out": "runs/x", "resume": False,
                                             "log-every": 10, "lr": 0.003, "norm": "rmsnorm"}, indent=2) + "\n")
    put("config", "metrics.jsonl",
        '{"step":0,"split":"valid","loss":2.3,"time_sec":0.1}\n'
        '{"step":2,"split":"train","loss":2.1,"time_sec":0.5,"sec_per_1k_steps":250}\n'
        '{"step":5,"split":"train","loss":1.9,"time_sec":0.9,"sec_')


if __name__ == "__main__":
    main()
