import os
import random
import shutil
import subprocess

import pytest

import neardup
from neardup import _cli


def cli_binary():
    """The neardup binary installed with the package (the wheel's), or
    $NEARDUP_BINARY."""
    return os.environ.get("NEARDUP_BINARY") or _cli.binary()


@pytest.fixture(scope="session")
def corpus():
    """A small corpus with near-duplicates: 120 documents from 40
    originals, each copied with a few words changed; fixed seed."""
    rng = random.Random(7)
    words = [f"w{i}" for i in range(400)]
    docs = []
    for i in range(40):
        base = [rng.choice(words) for _ in range(60)]
        docs.append(" ".join(base))
        for _ in range(2):
            v = list(base)
            for _ in range(rng.choice([1, 2, 8])):
                v[rng.randrange(len(v))] = rng.choice(words)
            docs.append(" ".join(v))
    rng.shuffle(docs)
    docs.append("")  # an empty document
    docs.append("short")
    return docs
