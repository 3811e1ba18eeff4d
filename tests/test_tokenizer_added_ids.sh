#!/usr/bin/env bash
# tests/test_tokenizer_added_ids.sh: the added tokens of a tokenizer.json get the ids the tokenizers
# library gives them on loading, not the file's (BPE and WordPiece), checked through `harness
# preprocess` against the library's ids; merges mixing "a b" and ["a", "b"] are refused, as the
# library refuses them. usage: test_tokenizer_added_ids.sh HARNESS_EXE SOURCE_DIR
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import tokenizers' 2>/dev/null; then
  echo "$NAME: skipped: no Python with the tokenizers package at $PY"
  finish; exit $?
fi

# $T/NAME.json (a tokenizer), $T/NAME.jsonl (documents) and $T/NAME.want (the library's ids,
# one JSON list a document) for each case; the tokenizers are trained here, then edited
cat >"$T/make.py" <<'EOF'
import json, sys
from tokenizers import ByteLevelBPETokenizer, BertWordPieceTokenizer, Tokenizer
out, corpus = sys.argv[1], open(sys.argv[2], encoding="utf-8").read().splitlines()
bpe = ByteLevelBPETokenizer()
bpe.train_from_iterator(corpus, vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"])
base = json.loads(bpe.to_str())
vocab = base["model"]["vocab"]
top = max(vocab.values())

def added(content, id, special=True):
    return {"id": id, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": special}

def case(name, tok, texts):
    with open(f"{out}/{name}.json", "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    lib = Tokenizer.from_file(f"{out}/{name}.json")
    with open(f"{out}/{name}.jsonl", "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    with open(f"{out}/{name}.want", "w") as f:
        for t in texts:
            f.write(json.dumps(lib.encode(t).ids) + "\n")

def variant(extra, edit=None):
    tok = json.loads(json.dumps(base))
    tok["added_tokens"] += extra
    if edit:
        edit(tok)
    return tok

texts = ["the seed<big> is fixed", "<a>reads<b> a<c>checkpoint<a>", "<reuse> every night <x>",
         "plain text only", "<big><big>"]
# an id far past the vocabulary (the file's id is not used)
case("big", variant([added("<big>", 100000)]), texts)
# an id the vocabulary already holds, and a token the vocabulary holds under another id
other = next(t for t, i in vocab.items() if i == top)
case("reuse", variant([added("<reuse>", 5), added(other, top + 7), added("<x>", top + 1)]),
     texts + [other])
# two vocabulary tokens on one id: new ids count the vocabulary's entries, not its largest id
case("dupid", variant([added("<a>", top + 1), added("<b>", top + 2)],
                      lambda t: t["model"]["vocab"].update({"zzqq": 7})), texts)
# one content added twice (the second gets the first's id), then another
case("twice", variant([added("<a>", top + 1), added("<a>", top + 2, False), added("<b>", top + 3)]),
     texts)
# a vocabulary with gaps in its ids: new ids start at its entry count, as the library does
def spread(t):
    t["model"]["vocab"] = {k: 2 * v for k, v in t["model"]["vocab"].items()}
case("gap", variant([added("<a>", 2 * top + 1), added("<c>", 2 * top + 2)], spread), texts)

# WordPiece with a special token added outside the vocabulary (add_special_tokens), and the
# same with the file giving it another id
wp = BertWordPieceTokenizer()
wp.train_from_iterator(corpus, vocab_size=600, min_frequency=1)
wp.add_special_tokens(["<new>"])
wtok = json.loads(wp.to_str())
wtexts = ["Every night <new> the cluster", "<new>", "no added token here", "a<new>b<new>"]
case("wp_new", wtok, wtexts)
for a in wtok["added_tokens"]:
    if a["content"] == "<new>":
        a["id"] = 99999
case("wp_moved", wtok, wtexts)

# merges mixing the two forms: the library refuses them
mixed = json.loads(json.dumps(base))
m = mixed["model"]["merges"]
m[1] = m[1].split(" ") if isinstance(m[1], str) else " ".join(m[1])
with open(f"{out}/mixed.json", "w", encoding="utf-8") as f:
    json.dump(mixed, f, ensure_ascii=False)
try:
    Tokenizer.from_file(f"{out}/mixed.json")
    print("the library read mixed merges")
except Exception:
    print("the library refuses mixed merges")
EOF
# the ids of PREFIX_text_document.bin/.idx, one JSON list a document
cat >"$T/read.py" <<'EOF'
import json, struct, sys
idx = open(sys.argv[1] + ".idx", "rb").read()
code, n = idx[17], struct.unpack_from("<Q", idx, 18)[0]
sizes = struct.unpack_from(f"<{n}i", idx, 34)
fmt, width = {8: ("H", 2), 4: ("i", 4)}[code]
data, at = open(sys.argv[1] + ".bin", "rb").read(), 0
for s in sizes:
    print(json.dumps(list(struct.unpack_from(f"<{s}{fmt}", data, at))))
    at += s * width
EOF
expect 0 "make the tokenizers" -- "$PY" "$T/make.py" "$T" "$SRC/scenarios/data/corpus.txt"
grep -q "the library refuses mixed merges" "$T/out" && pass || fail "the library read mixed merges"

echo "# the library's ids for added tokens, through harness preprocess"
for c in big reuse dupid twice gap wp_new wp_moved; do
  kind=bpe; case "$c" in wp_*) kind=wordpiece;; esac
  expect 0 "preprocess $c" -- "$H" preprocess --input "$T/$c.jsonl" --output-prefix "$T/$c" --tokenizer "$kind:$T/$c.json"
  "$PY" "$T/read.py" "$T/${c}_text_document" >"$T/$c.got" && pass || fail "$c: reading the output"
  if cmp -s "$T/$c.got" "$T/$c.want"; then pass; else
    fail "$c: the harness's ids differ from the library's"; diff "$T/$c.want" "$T/$c.got" | head -6
  fi
done
expect 0 "a file id other than the library's is warned about" -- "$H" preprocess --input "$T/big.jsonl" --output-prefix "$T/w" --tokenizer "bpe:$T/big.json"
says '"<big>": the file gives id 100000'
# the dtype follows the library's vocabulary size, not the file's stray id 100000
[ "$(od -An -tu1 -j17 -N1 "$T/big_text_document.idx" | tr -d ' ')" = 8 ] && pass || fail "big: not uint16"

echo "# merges mixing \"a b\" and [\"a\", \"b\"]: refused naming the merge"
expect 2 "mixed merges" -- "$H" preprocess --input "$T/big.jsonl" --output-prefix "$T/m" --tokenizer "bpe:$T/mixed.json"
says "model.merges[1]"
[ ! -e "$T/m_text_document.bin" ] && pass || fail "mixed merges: files were written"
finish
