"""neardup.Index: the persistent index in a directory, shared with the
command line."""

import json
import subprocess

import pytest

import neardup
from conftest import cli_binary

A = "the quick brown fox jumps over the lazy dog near the river bank today"
B = "the quick brown fox jumps over the lazy dog near the river bank today!"
C = "completely different words about a small town and its old market square"


def test_check_and_add_query_remove(tmp_path):
    loc = str(tmp_path / "ix")
    with neardup.Index(loc, threshold=0.8) as ix:
        r = ix.check_and_add("a", A)
        assert r.added and r.matches == []
        r = ix.check_and_add("b", B)
        assert not r.added and [m.id for m in r.matches] == ["a"]
        assert r.matches[0].similarity > 0.8
        assert ix.check_and_add("c", C).added
        assert [m.id for m in ix.query(B)] == ["a"]
        assert ix.query("nothing like it at all in this index of ours") == []
        assert len(ix) == 2
        with pytest.raises(neardup.Error):
            ix.check_and_add("a", "another text with the same id as before ok")
        ix.remove("a")
        assert ix.query(B) == [] and len(ix) == 1
        with pytest.raises(neardup.Error):
            ix.remove("a")
        ix.add("a2", A)
        res = ix.check_and_add_batch(["x", "y"], [B, "one more new document with its own words"])
        assert [r.added for r in res] == [False, True] and res[0].matches[0].id == "a2"
        assert ix.params["method"] == "minhash"
    # The command line reads the same index.
    out = subprocess.run([cli_binary(), "index", "query", "--index", loc, "-"], input=json.dumps({"id": "q", "text": B}) + "\n",
                         capture_output=True, text=True, check=True).stdout
    assert '"a2"' in out


def test_existing_index_options_must_agree(tmp_path):
    loc = str(tmp_path / "ix")
    neardup.Index(loc, threshold=0.8).close()
    neardup.Index(loc).close()  # no options: the stored ones
    with pytest.raises(neardup.OptionError, match="threshold"):
        neardup.Index(loc, threshold=0.5)
    with pytest.raises(neardup.OptionError):
        neardup.Index(str(tmp_path / "other"), no_such_flag=1)
    # The seed too: it changes every sketch, so another one is refused,
    # naming both (it was taken and ignored before session 19).
    sloc = str(tmp_path / "seeded")
    neardup.Index(sloc, seed=1).close()
    with pytest.raises(neardup.OptionError, match="--seed 7 but the index was made with seed 1"):
        neardup.Index(sloc, seed=7)
    neardup.Index(sloc, seed=1).close()
    ix = neardup.Index(loc)
    ix.close()
    with pytest.raises(neardup.Error, match="closed"):
        ix.query(A)


def test_other_methods_flags_refused(tmp_path):
    # A flag only another method reads is refused as `neardup index
    # create` refuses it, and no index is made; the flags of the method
    # (and those every method reads) are fine.
    with pytest.raises(neardup.OptionError, match="--num-perm applies to --method minhash, not simhash"):
        neardup.Index(str(tmp_path / "s"), method="simhash", num_perm=256)
    assert not (tmp_path / "s").exists()
    with pytest.raises(neardup.OptionError, match="--bits applies to --method simhash, not minhash"):
        neardup.Index(str(tmp_path / "m"), bits=128)
    with pytest.raises(neardup.OptionError, match="--threshold: a simhash index matches by --distance"):
        neardup.Index(str(tmp_path / "t"), method="simhash", threshold=0.5)
    neardup.Index(str(tmp_path / "ok"), method="simhash", bits=128, seed=3).close()
    # dedup() refuses --verify and --seed where the method ignores them.
    with pytest.raises(neardup.OptionError, match="--verify applies to --method minhash, simhash, not exact"):
        neardup.dedup([A, B], method="exact", verify=True)
    with pytest.raises(neardup.OptionError, match="--seed applies to"):
        neardup.dedup([A, B], method="ksentence", seed=7)


def test_bad_documents_and_limit(tmp_path):
    with neardup.Index(str(tmp_path / "idx")) as ix:
        # An AttributeError ('NoneType' object has no attribute 'encode')
        # and a bare UnicodeEncodeError before.
        with pytest.raises(TypeError, match=r"document 0: the text is NoneType, want str \(or bytes in UTF-8\)"):
            ix.add("a", None)
        with pytest.raises(ValueError, match=r"document 1: the text has a lone surrogate \('\\ud800'\) at character 1, which UTF-8 cannot hold"):
            ix.add_batch(["a", "b"], ["x", "a\ud800"])
        with pytest.raises(ValueError, match=r"document 0: the text has bytes that are not valid UTF-8 at byte 0; decode them first"):
            ix.add("a", b"\xff")
        # Two documents "x" and "y" were added from strings.
        with pytest.raises(TypeError, match="ids is one str"):
            ix.add_batch("xy", ["a", "b"])
        # A negative limit gave every match.
        with pytest.raises(ValueError, match="limit must be a whole number of at least 0"):
            ix.query("some text", limit=-1)
        assert len(ix) == 0
        ix.add("a", b"bytes in UTF-8 are text too")
        assert ix.query("bytes in UTF-8 are text too")[0].id == "a"


def test_storage_errors_are_oserrors(tmp_path):
    # A folder that cannot be made: an OSError in words, no Go "store:".
    with pytest.raises(neardup.StorageError) as e:
        neardup.Index("/proc/nope/x")
    assert isinstance(e.value, OSError) and not isinstance(e.value, ValueError)
    assert "cannot be created" in str(e.value) and "store:" not in str(e.value)
    # The same index opened twice in this process says so.
    with neardup.Index(str(tmp_path / "ix")):
        with pytest.raises(neardup.StorageError, match="already open.*in this process"):
            neardup.Index(str(tmp_path / "ix"))
