"""SQuAD v1.1 dev for BERT-large (bert-99, bert-99.9): tokenization, 384-token features, answer
spans from the model's logits, and the official F1 / exact-match scoring.

Follows the MLCommons reference, mlcommons/inference ``language/bert/`` (commit
b66003e10e2db4b8c36a448b0545ec90fcc6e9e9):

* ``squad_QSL.py``: ``max_seq_length`` 384, ``max_query_length`` 64, ``doc_stride`` 128, the
  features made by ``create_squad_data.py``'s ``read_squad_examples`` (``is_training=False``:
  words split on ``" \\t\\r\\n"`` and U+202F) and ``convert_examples_to_features`` (query cut to
  64 tokens; windows of ``384 - len(query) - 3`` document tokens, each next window
  ``min(length, 128)`` tokens on; ``[CLS] query [SEP] window [SEP]``, segment 0 then 1, zero
  padding; ``token_is_max_context`` by ``_check_is_max_context``'s ``min(left, right) + 0.01 x
  length``; unique ids from 1000000000), with the tokenizer ``transformers.BertTokenizer(vocab)``
  (lower case);
* ``accuracy-squad.py``: each logged sample is ``(384, 2)`` start/end logits (float32 by
  default; ``--output_dtype``); ``write_predictions`` with n-best 20 and max answer length 30:
  the 20 best start and end positions of each window, spans inside the document part, in
  their window's max context, end >= start, at most 30 tokens, ranked by start + end logit,
  WordPiece joined back (``" ##"`` removed) and projected onto the original text by
  ``get_final_text`` (Google BERT's ``BasicTokenizer`` alignment), ``"empty"`` when none;
* ``evaluate_v1.1.py`` (the official SQuAD v1.1 script): answers normalized (lower case, no
  punctuation, no articles a/an/the, white space collapsed), token F1 and exact match, the best
  over the ground truths, averaged over every question of the file (an unanswered one scores
  0), in percent.

The tokenizer is Google BERT's ``FullTokenizer`` (google-research/bert ``tokenization.py``,
commit f18bd94b8fee9bda3c293e0932d100add35b780c: ``BasicTokenizer`` -- control characters
dropped, white space, CJK characters split out, lower case, accents stripped (NFD, no ``Mn``),
punctuation split -- then greedy longest-match-first WordPiece with ``##`` continuations,
``[UNK]`` for a word it cannot cover or longer than 200 characters), written here because
neither ``transformers`` nor ``tokenizers`` is in the guest's venv and nothing may be
downloaded. It is what ``BertTokenizer(vocab, do_lower_case=True)`` computes, including that
class's two additions: text NFC-normalized first and the special tokens (``[CLS]``, ``[SEP]``,
``[PAD]``, ``[MASK]``, ``[UNK]``) never split.

Features are cached (``<cache dir>/squad/<sha256 of file, vocabulary and settings>/``: a ``.npz``
of the token ids and a JSON of the tokens and maps; no pickle) so a later run skips the
tokenization.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import re
import string
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from miglab.formats.manifest import sha256_file
from miglab.mlperf.guest.datasets.base import DatasetError, SampleSource, read_accuracy_entries

__all__ = [
    "DOC_STRIDE",
    "MAX_QUERY_LENGTH",
    "MAX_SEQ_LENGTH",
    "BasicTokenizer",
    "Feature",
    "FullTokenizer",
    "SquadExample",
    "SquadSource",
    "best_prediction",
    "convert_examples_to_features",
    "evaluate",
    "exact_match_score",
    "f1_score",
    "get_final_text",
    "load_vocab",
    "normalize_answer",
    "read_squad_examples",
]

MAX_SEQ_LENGTH = 384
MAX_QUERY_LENGTH = 64
DOC_STRIDE = 128
N_BEST = 20
MAX_ANSWER_LENGTH = 30
FIRST_UNIQUE_ID = 1_000_000_000
SPECIAL_TOKENS = ("[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]")
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
CACHE_VERSION = 1


# --- tokenization ----------------------------------------------------------------------------
def load_vocab(path: str | Path) -> dict[str, int]:
    """``vocab.txt``: one token a line, its id the line number from 0 (``BertTokenizer``'s
    ``load_vocab``: the newline stripped)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read the vocabulary ({exc})") from None
    if lines and lines[-1] == "":
        lines.pop()
    vocab: dict[str, int] = {}
    for index, token in enumerate(lines):
        vocab[token.rstrip("\r")] = index
    for token in ("[CLS]", "[SEP]", "[UNK]"):
        if token not in vocab:
            raise DatasetError(f"{path}: not a BERT vocabulary (no {token})")
    return vocab


def whitespace_tokenize(text: str) -> list[str]:
    return text.strip().split()


def _is_whitespace(char: str) -> bool:
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    # every non-letter, non-digit ASCII character counts as punctuation
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


class BasicTokenizer:
    """Google BERT's ``BasicTokenizer`` (lower case); with ``hf=True`` also the NFC
    normalization and the never-split special tokens of transformers' ``BertTokenizer``."""

    def __init__(self, do_lower_case: bool = True, hf: bool = False):
        self.do_lower_case = do_lower_case
        self.hf = hf
        self.never_split = set(SPECIAL_TOKENS) if hf else set()

    def tokenize(self, text: str) -> list[str]:
        text = self._clean_text(text)
        text = "".join(f" {c} " if _is_cjk(ord(c)) else c for c in text)
        if self.hf:
            text = unicodedata.normalize("NFC", text)
        out: list[str] = []
        for token in whitespace_tokenize(text):
            if token in self.never_split:
                out.append(token)
                continue
            if self.do_lower_case:
                token = self._strip_accents(token.lower())
            out.extend(self._split_on_punc(token))
        return whitespace_tokenize(" ".join(out))

    @staticmethod
    def _clean_text(text: str) -> str:
        out = []
        for c in text:
            cp = ord(c)
            if cp == 0 or cp == 0xFFFD or _is_control(c):
                continue
            out.append(" " if _is_whitespace(c) else c)
        return "".join(out)

    @staticmethod
    def _strip_accents(text: str) -> str:
        text = unicodedata.normalize("NFD", text)
        return "".join(c for c in text if unicodedata.category(c) != "Mn")

    @staticmethod
    def _split_on_punc(text: str) -> list[str]:
        words: list[list[str]] = []
        new_word = True
        for c in text:
            if _is_punctuation(c):
                words.append([c])
                new_word = True
            else:
                if new_word:
                    words.append([])
                new_word = False
                words[-1].append(c)
        return ["".join(w) for w in words]


class FullTokenizer:
    """Basic tokenization then WordPiece (see the module docstring)."""

    def __init__(self, vocab: dict[str, int], max_chars_per_word: int = 200):
        self.vocab = vocab
        self.basic = BasicTokenizer(do_lower_case=True, hf=True)
        self.max_chars_per_word = max_chars_per_word

    def wordpiece(self, word: str) -> list[str]:
        if len(word) > self.max_chars_per_word:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end, piece = len(word), None
            while start < end:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in self.vocab:
                    piece = sub
                    break
                end -= 1
            if piece is None:
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        out = []
        for token in self.basic.tokenize(text):
            out.extend([token] if token in self.basic.never_split else self.wordpiece(token))
        return out

    def ids(self, tokens: list[str]) -> list[int]:
        unk = self.vocab["[UNK]"]
        return [self.vocab.get(t, unk) for t in tokens]


# --- examples and features -----------------------------------------------------------------
@dataclass
class SquadExample:
    qas_id: str
    question: str
    doc_tokens: list[str]
    answers: list[str]


@dataclass
class Feature:
    unique_id: int
    example_index: int
    tokens: list[str]
    token_to_orig_map: dict[int, int]
    token_is_max_context: dict[int, bool]
    input_ids: np.ndarray
    input_mask: np.ndarray
    segment_ids: np.ndarray


def _doc_words(text: str) -> list[str]:
    words: list[str] = []
    prev_ws = True
    for c in text:
        if c in (" ", "\t", "\r", "\n") or ord(c) == 0x202F:
            prev_ws = True
        else:
            if prev_ws:
                words.append(c)
            else:
                words[-1] += c
            prev_ws = False
    return words


def read_squad_examples(data: dict) -> list[SquadExample]:
    """The questions of a SQuAD v1.1 file (parsed JSON), in file order."""
    examples = []
    try:
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                words = _doc_words(paragraph["context"])
                for qa in paragraph["qas"]:
                    answers = [str(a["text"]) for a in qa.get("answers", [])]
                    examples.append(SquadExample(str(qa["id"]), qa["question"], words, answers))
    except (KeyError, TypeError) as exc:
        raise DatasetError(f"not a SQuAD v1.1 file (missing {exc})") from None
    return examples


def _max_context(spans: list[tuple[int, int]], current: int, position: int) -> bool:
    best_score, best = None, None
    for k, (start, length) in enumerate(spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best = score, k
    return current == best


def doc_spans(n_tokens: int, max_tokens: int, stride: int = DOC_STRIDE) -> list[tuple[int, int]]:
    """The sliding windows ``(start, length)`` over ``n_tokens`` document tokens."""
    spans, start = [], 0
    while start < n_tokens:
        length = min(n_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length == n_tokens:
            break
        start += min(length, stride)
    return spans


def convert_examples_to_features(
    examples: list[SquadExample],
    tokenizer: FullTokenizer,
    max_seq_length: int = MAX_SEQ_LENGTH,
    doc_stride: int = DOC_STRIDE,
    max_query_length: int = MAX_QUERY_LENGTH,
) -> list[Feature]:
    """``convert_examples_to_features(is_training=False)`` (see the module docstring)."""
    features = []
    unique_id = FIRST_UNIQUE_ID
    for ex_index, ex in enumerate(examples):
        query = tokenizer.tokenize(ex.question)[:max_query_length]
        tok_to_orig, doc_tokens = [], []
        for i, word in enumerate(ex.doc_tokens):
            for sub in tokenizer.tokenize(word):
                tok_to_orig.append(i)
                doc_tokens.append(sub)
        max_doc = max_seq_length - len(query) - 3  # [CLS], [SEP], [SEP]
        spans = doc_spans(len(doc_tokens), max_doc, doc_stride)
        for span_index, (start, length) in enumerate(spans):
            tokens = ["[CLS]", *query, "[SEP]"]
            segments = [0] * len(tokens)
            to_orig, max_ctx = {}, {}
            for i in range(length):
                pos = start + i
                to_orig[len(tokens)] = tok_to_orig[pos]
                max_ctx[len(tokens)] = _max_context(spans, span_index, pos)
                tokens.append(doc_tokens[pos])
                segments.append(1)
            tokens.append("[SEP]")
            segments.append(1)
            ids = tokenizer.ids(tokens)
            n = len(ids)
            input_ids = np.zeros(max_seq_length, dtype=np.int64)
            input_mask = np.zeros(max_seq_length, dtype=np.int64)
            segment_ids = np.zeros(max_seq_length, dtype=np.int64)
            input_ids[:n], input_mask[:n], segment_ids[:n] = ids, 1, segments
            features.append(
                Feature(
                    unique_id,
                    ex_index,
                    tokens,
                    to_orig,
                    max_ctx,
                    input_ids,
                    input_mask,
                    segment_ids,
                )
            )
            unique_id += 1
    return features


# --- answers from logits -------------------------------------------------------------------
def get_final_text(pred_text: str, orig_text: str, do_lower_case: bool = True) -> str:
    """``accuracy-squad.py``'s ``get_final_text``: the span of ``orig_text`` that the
    tokenized prediction ``pred_text`` covers, found by aligning the two without spaces;
    ``orig_text`` when they cannot be aligned."""

    def strip_spaces(text):
        chars, ns_to_s = [], {}
        for i, c in enumerate(text):
            if c == " ":
                continue
            ns_to_s[len(chars)] = i
            chars.append(c)
        return "".join(chars), ns_to_s

    tok_text = " ".join(BasicTokenizer(do_lower_case=do_lower_case).tokenize(orig_text))
    start = tok_text.find(pred_text)
    if start == -1:
        return orig_text
    end = start + len(pred_text) - 1
    orig_ns, orig_map = strip_spaces(orig_text)
    tok_ns, tok_map = strip_spaces(tok_text)
    if len(orig_ns) != len(tok_ns):
        return orig_text
    tok_s_to_ns = {s: ns for ns, s in tok_map.items()}
    orig_start = orig_map.get(tok_s_to_ns[start]) if start in tok_s_to_ns else None
    if orig_start is None:
        return orig_text
    orig_end = orig_map.get(tok_s_to_ns[end]) if end in tok_s_to_ns else None
    if orig_end is None:
        return orig_text
    return orig_text[orig_start : orig_end + 1]


def _best_indexes(logits, n_best: int) -> list[int]:
    order = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [i for i, _ in order[:n_best]]


def best_prediction(
    example: SquadExample,
    features: list[Feature],
    logits: dict[int, np.ndarray],
    n_best: int = N_BEST,
    max_answer_length: int = MAX_ANSWER_LENGTH,
) -> str | None:
    """``write_predictions``' answer to one question from its features' ``(384, 2)`` logits
    (by unique id); None when none of its features was logged."""
    prelim = []
    seen_any = False
    for f_index, f in enumerate(features):
        out = logits.get(f.unique_id)
        if out is None:
            continue
        seen_any = True
        start_logits = [float(x) for x in out[:, 0]]
        end_logits = [float(x) for x in out[:, 1]]
        for s in _best_indexes(start_logits, n_best):
            for e in _best_indexes(end_logits, n_best):
                if s >= len(f.tokens) or e >= len(f.tokens):
                    continue
                if s not in f.token_to_orig_map or e not in f.token_to_orig_map:
                    continue
                if not f.token_is_max_context.get(s, False) or e < s:
                    continue
                if e - s + 1 > max_answer_length:
                    continue
                prelim.append((f_index, s, e, start_logits[s] + end_logits[e]))
    if not seen_any:
        return None
    if not prelim:
        return "empty"  # the reference's nonce prediction
    # The reference ranks every candidate (a stable sort), de-duplicates the texts into an
    # n-best list and answers with its first entry: the best-ranked candidate's text.
    f_index, s, e, _ = max(prelim, key=lambda p: p[3])  # max() keeps the first of equals
    f = features[f_index]
    tok_text = " ".join(f.tokens[s : e + 1]).replace(" ##", "").replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    orig_words = example.doc_tokens[f.token_to_orig_map[s] : f.token_to_orig_map[e] + 1]
    return get_final_text(tok_text, " ".join(orig_words))


# --- the official evaluation -----------------------------------------------------------------
def normalize_answer(s: str) -> str:
    """``evaluate_v1.1.py``: lower case, punctuation removed, articles removed, white space
    collapsed."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def f1_score(prediction: str, truth: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    same = sum((collections.Counter(pred) & collections.Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def exact_match_score(prediction: str, truth: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(truth)


def evaluate(examples: list[SquadExample], predictions: dict[str, str]) -> dict:
    """``{"exact_match", "f1"}`` in percent over ``examples`` (an unanswered one scores 0)."""
    f1 = em = 0.0
    for ex in examples:
        if ex.qas_id not in predictions or not ex.answers:
            continue
        pred = predictions[ex.qas_id]
        em += max(float(exact_match_score(pred, a)) for a in ex.answers)
        f1 += max(f1_score(pred, a) for a in ex.answers)
    total = len(examples)
    return {
        "exact_match": 100.0 * em / total if total else 0.0,
        "f1": 100.0 * f1 / total if total else 0.0,
    }


# --- the QSL ---------------------------------------------------------------------------------
class SquadSource(SampleSource):
    """SQuAD v1.1 dev features as a QSL: sample ``i`` is feature ``i`` (``input_ids``,
    ``input_mask``, ``segment_ids``, int64, 384 each)."""

    name = "squad-v1.1-dev"

    def __init__(
        self,
        squad_json: str | Path,
        vocab: str | Path,
        *,
        cache_dir: str | Path | None = None,
        count: int | None = None,
    ):
        super().__init__()
        self.path, self.vocab_path = Path(squad_json), Path(vocab)
        for p, what in ((self.path, "SQuAD file"), (self.vocab_path, "vocabulary")):
            if not p.is_file():
                raise DatasetError(f"{p}: no such {what}")
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{self.path}: not a SQuAD JSON file ({exc})") from None
        if not isinstance(data, dict):
            raise DatasetError(f"{self.path}: not a SQuAD JSON file")
        self.version = str(data.get("version"))
        self.examples = read_squad_examples(data)
        if not self.examples:
            raise DatasetError(f"{self.path}: no questions")
        self.features = self._features(data, cache_dir)
        self.total_features = len(self.features)
        self._example_of_feature = [f.example_index for f in self.features]
        if count is not None:
            if count < 1:
                raise DatasetError(f"sample count must be at least 1, got {count}")
            self.features = self.features[:count]
        by_example: dict[int, list[Feature]] = collections.defaultdict(list)
        for f in self.features:
            by_example[f.example_index].append(f)
        self._by_example = by_example

    def _features(self, data: dict, cache_dir) -> list[Feature]:
        inputs = [CACHE_VERSION, sha256_file(self.path), sha256_file(self.vocab_path)]
        inputs += [MAX_SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH]
        key = hashlib.sha256(json.dumps(inputs).encode()).hexdigest()[:24]
        folder = Path(cache_dir) / "squad" / key if cache_dir else None
        if folder is not None and (folder / "features.json").is_file():
            try:
                return self._read_cache(folder)
            except (OSError, ValueError, KeyError):
                pass  # made again below
        tokenizer = FullTokenizer(load_vocab(self.vocab_path))
        features = convert_examples_to_features(self.examples, tokenizer)
        if folder is not None:
            self._write_cache(folder, features)
        return features

    @staticmethod
    def _write_cache(folder: Path, features: list[Feature]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        tag = f"{os.getpid()}.tmp"
        arrays = {
            name: np.stack([getattr(f, name) for f in features]).astype(np.int32)
            for name in INPUT_NAMES
        }
        np.savez(folder / f".features.{tag}.npz", **arrays)
        meta = [
            [f.unique_id, f.example_index, f.tokens, sorted(f.token_to_orig_map.items()),
             sorted(k for k, v in f.token_is_max_context.items() if v),
             sorted(f.token_is_max_context)]
            for f in features
        ]  # fmt: skip
        (folder / f".features.{tag}.json").write_text(json.dumps(meta), encoding="utf-8")
        os.replace(folder / f".features.{tag}.npz", folder / "features.npz")
        os.replace(folder / f".features.{tag}.json", folder / "features.json")  # last: complete

    @staticmethod
    def _read_cache(folder: Path) -> list[Feature]:
        meta = json.loads((folder / "features.json").read_text(encoding="utf-8"))
        with np.load(folder / "features.npz", allow_pickle=False) as z:
            arrays = {name: z[name].astype(np.int64) for name in INPUT_NAMES}
        if any(len(a) != len(meta) for a in arrays.values()):
            raise ValueError("cache arrays and features disagree")
        out = []
        for i, (uid, ex, tokens, to_orig, max_true, positions) in enumerate(meta):
            true = set(max_true)
            out.append(
                Feature(
                    uid,
                    ex,
                    tokens,
                    {int(k): int(v) for k, v in to_orig},
                    {int(p): p in true for p in positions},
                    arrays["input_ids"][i],
                    arrays["input_mask"][i],
                    arrays["segment_ids"][i],
                )
            )
        return out

    @property
    def count(self) -> int:
        return len(self.features)

    def input_names(self) -> tuple[str, ...]:
        return INPUT_NAMES

    def read(self, index: int) -> dict[str, np.ndarray]:
        f = self.features[index]
        return {
            "input_ids": f.input_ids,
            "input_mask": f.input_mask,
            "segment_ids": f.segment_ids,
        }

    def score(self, log_path: str | Path, dtype, benchmark: str = "bert-99") -> dict:
        """Exact match and F1 (percent) as ``accuracy-squad.py`` then ``evaluate_v1.1.py``
        compute them from the logged ``(384, 2)`` logits of ``dtype``."""
        got = read_accuracy_entries(log_path, dtype, (MAX_SEQ_LENGTH, 2))
        for idx in got:
            if idx >= self.count:
                raise DatasetError(f"{log_path}: qsl_idx {idx} beyond the {self.count} features")
        logits = {self.features[i].unique_id: v.astype(np.float32) for i, v in got.items()}
        examples = self.scored_examples()
        predictions = {}
        for ex_index, ex in enumerate(examples):
            pred = best_prediction(ex, self._by_example.get(ex_index, []), logits)
            if pred is not None:
                predictions[ex.qas_id] = pred
        scores = evaluate(examples, predictions)
        bad = [k for k, v in scores.items() if not math.isfinite(v)]
        if bad:
            raise DatasetError(f"{log_path}: {', '.join(bad)} not finite")
        return {"samples": len(got), "questions": len(examples), **scores}

    def scored_examples(self) -> list[SquadExample]:
        """The questions scored: all of the file's, or with ``count`` those whose windows are
        all in the set."""
        if self.count == self.total_features:
            return self.examples
        last = self.features[-1].example_index
        whole = self._example_of_feature[self.count] != last  # its windows all in the set
        return self.examples[: last + 1 if whole else last]

    def describe(self) -> dict:
        return {
            "dataset": self.name,
            "file": str(self.path),
            "version": self.version,
            "vocab": str(self.vocab_path),
            "samples": self.count,
            "features": self.total_features,
            "questions": len(self.examples),
            "max_seq_length": MAX_SEQ_LENGTH,
            "doc_stride": DOC_STRIDE,
            "max_query_length": MAX_QUERY_LENGTH,
            "tokenizer": "Google BERT FullTokenizer (lower case), as transformers' BertTokenizer",
        }
