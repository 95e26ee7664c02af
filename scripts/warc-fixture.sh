#!/bin/sh
# Rewrites corpus/testdata/wget.warc.gz: the corpus tests serve their
# fixture pages on 127.0.0.1:18321 (loopback only) and crawl them with
# wget --warc-file. Needs wget (apt-get install -y wget).
set -eu
cd "$(dirname "$0")/.."
go test ./corpus -run 'TestWgetWARC$' -count=1 -write-fixture
ls -l corpus/testdata/wget.warc.gz
