"""neardup.dedup against the command line: the same texts and flags must
give the same kept and cluster fields as `neardup dedup --clusters`."""

import json
import os
import subprocess

import pytest

import neardup
from conftest import cli_binary


def run_cli(tmp_path, texts, ids, flags):
    inp = tmp_path / "in.jsonl"
    with open(inp, "w", encoding="utf-8") as f:
        for i, t in zip(ids, texts):
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
    out = tmp_path / "clusters.jsonl"
    pairs = tmp_path / "pairs.jsonl"
    subprocess.run([cli_binary(), "dedup", "-q", "--clusters", str(out), "--pairs", str(pairs), *flags, str(inp)], check=True)
    rows = [json.loads(l) for l in open(out, encoding="utf-8")]
    prs = [json.loads(l) for l in open(pairs, encoding="utf-8")]
    return [r["kept"] for r in rows], [r["cluster"] for r in rows], prs


CASES = [
    {},
    {"threshold": 0.5},
    {"unit": "char", "ngram": 4, "num_perm": 64},
    {"method": "simhash"},
    {"method": "exact"},
    {"method": "jaccard", "threshold": 0.6},
    {"keep": "longest", "cluster": "leader"},
    {"verify": True, "workers": 1},
    {"method": "cascade"},
    {"method": "cascade", "then": "simhash"},
]


@pytest.mark.parametrize("options", CASES, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_same_as_cli(tmp_path, corpus, options):
    ids = [str(i) for i in range(len(corpus))]
    want_kept, want_cluster, want_pairs = run_cli(tmp_path, corpus, ids, neardup._dedup.options_to_flags(options))
    r = neardup.dedup(corpus, **options)
    assert r.kept == want_kept
    assert r.cluster == want_cluster
    assert len(r) == len(corpus)
    assert r.stats["documents"] == len(corpus)
    assert r.stats["removed"] == r.removed
    assert [(p["id1"], p["id2"]) for p in want_pairs] == [(a, b) for a, b, _ in r.pairs]


def test_cascade_is_its_near_method(corpus):
    # Exact copies (case and spacing folded by the normalisation) are
    # joined first; the clusters are those of the near method alone.
    texts = corpus + [corpus[0], corpus[1].upper(), "  " + corpus[2] + "  "]
    for then in ("minhash", "simhash"):
        a = neardup.dedup(texts, method="cascade", then=then)
        b = neardup.dedup(texts, method=then)
        assert a.kept == b.kept and a.cluster == b.cluster
        assert a.stats["exact_copies"] >= 3
    with pytest.raises(neardup.OptionError, match="--then"):
        neardup.dedup(texts, method="minhash", then="simhash")


def test_ids_and_small_batches(tmp_path, corpus):
    ids = [f"doc-{i}" for i in range(len(corpus))]
    want_kept, want_cluster, _ = run_cli(tmp_path, corpus, ids, [])
    r = neardup.dedup(iter(corpus), ids=ids, batch_size=7)
    assert r.kept == want_kept and r.cluster == want_cluster
    assert r.ids == ids
    assert sum(not k for k in r.kept) > 0


def test_dict_rows(corpus):
    rows = [{"id": f"r{i}", "body": t} for i, t in enumerate(corpus)]
    r = neardup.dedup(rows, text_field="body")
    plain = neardup.dedup(corpus)
    assert r.kept == plain.kept
    assert r.cluster == ["r" + c for c in plain.cluster]


def test_empty_input():
    r = neardup.dedup([])
    assert r.kept == [] and r.cluster == [] and r.pairs == []


def test_errors(tmp_path):
    with pytest.raises(neardup.OptionError, match="--threshold"):
        neardup.dedup(["a"], threshold=1.5)
    with pytest.raises(ValueError, match="unknown flag: --no-such-option"):
        neardup.dedup(["a"], no_such_option=1)
    with pytest.raises(neardup.OptionError, match="--clusters"):
        neardup.dedup(["a"], clusters="x.jsonl")
    # The flags of input files and of the staged job were taken and
    # ignored (format="txt" read each JSON line as a text).
    for opt in [dict(format="txt"), dict(executor="local"), dict(work="w"), dict(tasks=3)]:
        with pytest.raises(neardup.OptionError, match="--%s is not an option here" % next(iter(opt))):
            neardup.dedup(["a b c d e f", "a b c d e f"], **opt)
    with pytest.raises(TypeError):
        neardup.dedup([1, 2])
    # A usage error found once the run started is an OptionError too (it
    # was a plain neardup.Error whose message began "usage:").
    bad_idf = tmp_path / "bad.idf"
    bad_idf.write_text("not an idf table\n")
    with pytest.raises(neardup.OptionError, match="--idf"):
        neardup.dedup(["a b c d e f"], method="simhash", weights="tfidf", idf=str(bad_idf))
    with pytest.raises(ValueError, match="fewer ids"):
        neardup.dedup(["a", "b"], ids=["1"])


# One fault, one wording: neardup.dedup and neardup.Index check texts and
# ids with the same helper (they had two, whose words differed: "bytes
# that are not valid UTF-8" against "the text has bytes ...", a lone
# surrogate shown or not, "text is int" against "the text is int").
@pytest.mark.parametrize("text", [b"ok", b"a\xffb", "a\ud800b", 5, None])
def test_dedup_and_index_say_the_same(tmp_path, text):
    def said(f):
        try:
            f()
        except (TypeError, ValueError) as e:
            return type(e), str(e)
        return None

    by_dedup = said(lambda: neardup.dedup(["first", {"text": text}]))
    with neardup.Index(str(tmp_path / "idx")) as ix:
        by_index = said(lambda: ix.add_batch(["x", "y"], ["first", text]))
    assert by_dedup == by_index
    assert (by_dedup is None) == (text == b"ok")


def test_bad_text_and_ids_name_the_document():
    # One string is not a list of one-character documents.
    with pytest.raises(TypeError, match="not a collection of texts"):
        neardup.dedup("a rose is a rose")
    with pytest.raises(ValueError, match="document 1: the text has bytes that are not valid UTF-8 at byte 0"):
        neardup.dedup([b"a b c", b"\xff\xfe abc"])
    with pytest.raises(ValueError, match="document 1: the text has bytes that are not valid UTF-8 at byte 2"):
        neardup.dedup([{"text": "a"}, {"text": b"ab\xe4"}])
    with pytest.raises(TypeError, match=r"document 1: the text is int, want str \(or bytes in UTF-8\)"):
        neardup.dedup([{"text": "a"}, {"text": 5}])
    with pytest.raises(ValueError, match="document 0: the text has a lone surrogate"):
        neardup.dedup(["a\ud800b c d e f"])
    with pytest.raises(ValueError, match="document 1: the id has a lone surrogate"):
        neardup.dedup(["a", "b"], ids=["x", "y\udc80"])
    # An empty id became the command line's FILE:LINE, an id not among
    # those given, and cluster named the last document for it.
    with pytest.raises(ValueError, match="document 0: the id is empty"):
        neardup.dedup(["a b c d e", "a b c d e"], ids=["", "y"])
    with pytest.raises(ValueError, match="document 1: the id is empty"):
        neardup.dedup([{"id": "x", "text": "a b c d e"}, {"id": "", "text": "a b c d e"}])


def test_interrupted_run_is_cleaned_up(corpus):
    class Stop(Exception):
        pass

    def gen():
        yield from corpus[:50]
        raise Stop  # as Ctrl-C would, in the middle of the input

    with pytest.raises(Stop):
        neardup.dedup(gen(), batch_size=10)
    # The library is still usable and gives the same answer as before.
    assert neardup.dedup(corpus).kept == neardup.dedup(list(corpus)).kept


def test_unicode_and_html():
    texts = ["<p>你好，世界。今天天气很好</p>", "<div>你好，世界。今天天气很好</div>", "naïve café"]
    r = neardup.dedup(texts, html=True, unit="char", ngram=2)
    assert r.kept == [True, False, True]
    assert r.cluster == ["0", "0", "2"]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_batch_size_must_be_positive(bad):
    with pytest.raises(ValueError, match="batch_size"):
        neardup.dedup(["a b c"], batch_size=bad)


def test_duplicate_ids_warn():
    # `neardup dedup` warns when two documents share an id; dedup() was
    # silent (stats["duplicate_ids"] only) and cluster ['x', 'x', 'y']
    # could not say which 'x'.
    texts = ["a b c d e f g", "a b c d e f g", "x y z w v u"]
    with pytest.warns(UserWarning, match=r'1 id is used by more than one document \("x"\).*cluster_index'):
        r = neardup.dedup(texts, ids=["x", "x", "y"])
    assert r.stats["duplicate_ids"] == 1 and r.cluster_index == [0, 0, 2]
    with pytest.warns(UserWarning, match="2 ids are used"):
        neardup.dedup([{"id": i, "text": t} for i, t in zip("abab", texts + ["q r s t"])])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        neardup.dedup(texts, ids=["x", "y", "z"])


def test_missing_field_says_which_option():
    with pytest.raises(neardup.Error, match=r"document 0: no field 'text' \(the row has: 'id', 'body'\); text_field= names"):
        neardup.dedup([{"id": "a", "body": "x"}])
    with pytest.raises(neardup.Error, match=r"document 1: no field 'id' \(the first document had one\); give every row one, or ids=, or id_field="):
        neardup.dedup([{"id": "a", "text": "x"}, {"text": "y"}])
