#!/usr/bin/env python3
# tools/make_corpus.py: writes scenarios/data/corpus.txt, the project's own training text,
# generated deterministically from a small grammar (so the project may redistribute it).
"""Usage: python3 tools/make_corpus.py [OUT] [--paragraphs N]

The text has the regularities a small language model can learn in a few dozen steps
(a fixed vocabulary, templates, agreement, numbers that count up) and the features a
tokenizer test needs (contractions, unicode words, digits, runs of spaces and newlines).
The same version of this script always writes the same bytes: it uses its own linear
congruential generator, not Python's random module.
"""
import sys

SUBJECTS = ["the engineer", "a small model", "the reference device", "the new accelerator",
            "our harness", "the compiler", "a careful reviewer", "the cluster", "the baseline",
            "every rank", "the scheduler", "the optimizer", "the café in Zürich", "a naïve port"]
VERBS = ["trains", "measures", "compares", "records", "checks", "loads", "writes", "reads",
         "reduces", "schedules", "validates", "reports"]
OBJECTS = ["the loss", "each step", "the gradients", "a checkpoint", "the tokens",
           "the memory", "the throughput", "the weights", "a long table", "the plots",
           "the learning rate", "every tensor"]
ADVERBS = ["quickly", "slowly", "again", "twice", "carefully", "without error", "in order",
           "on time", "exactly", "by hand"]
CLAUSES = ["because the seed is fixed", "while the device is busy", "after the warmup ends",
           "before the report is written", "when the tolerance is tight", "so nobody guesses",
           "and it doesn't drift", "but it isn't fast yet", "as the design says"]
OPENERS = ["Today", "In the morning", "At step {n}", "After {n} steps", "On rank {r}",
           "Every night", "Once more", "Later"]


class Lcg:
    """64-bit linear congruential generator (Knuth's MMIX constants)."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def below(self, n):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return (self.state >> 33) % n

    def pick(self, items):
        return items[self.below(len(items))]


def sentence(rng, n):
    opener = rng.pick(OPENERS).format(n=n, r=rng.below(8))
    words = [opener + ",", rng.pick(SUBJECTS), rng.pick(VERBS), rng.pick(OBJECTS)]
    if rng.below(2):
        words.append(rng.pick(ADVERBS))
    if rng.below(3) == 0:
        words.append(rng.pick(CLAUSES))
    text = " ".join(words) + rng.pick([".", ".", ".", "!", "?"])
    return text[0].upper() + text[1:]


def paragraph(rng, index):
    count = 2 + rng.below(4)
    body = " ".join(sentence(rng, index * 10 + k) for k in range(count))
    if rng.below(5) == 0:
        body += "   (loss %d.%03d at step %d)" % (rng.below(8), rng.below(1000), index)
    return body


def main(argv):
    out = "scenarios/data/corpus.txt"
    paragraphs = 1000
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--paragraphs":
            paragraphs = int(args.pop(0))
        else:
            out = arg
    rng = Lcg(20261121)
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for i in range(paragraphs):
            f.write(paragraph(rng, i))
            f.write("\n\n" if rng.below(4) else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
