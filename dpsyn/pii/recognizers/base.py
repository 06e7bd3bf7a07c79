"""Building blocks shared by dpsyn's recognizers: the offline e-mail check, the exact no-match
shortcut, the linear-time context enhancer and a recognizer for "label: value" identifiers."""

from __future__ import annotations

import os
import re

# tldextract reads this when its module-level extractor is built; an empty value
# means "never fetch the public-suffix list, use the bundled snapshot".
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

import tldextract  # noqa: E402
from presidio_analyzer import AnalysisExplanation, EntityRecognizer, PatternRecognizer, RecognizerResult  # noqa: E402
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer  # noqa: E402
from presidio_analyzer.pattern_recognizer import REGEX_TIMEOUT_SECONDS as _REGEX_TIMEOUT  # noqa: E402
from presidio_analyzer.predefined_recognizers import EmailRecognizer  # noqa: E402

__all__ = ["FastContextEnhancer", "LabelledValueRecognizer", "OfflineEmailRecognizer", "TablePatternRecognizer",
           "same_digits",
           "skip_when_no_match"]  # fmt: skip

# An extractor that can never touch the network: no URLs, no disk cache, the
# bundled public-suffix snapshot only.
_OFFLINE_TLD = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


def same_digits(text: str) -> bool:
    """Whether all digits of ``text`` are the same one (``222-222-2222``)."""
    return len(set(re.sub(r"\D", "", text))) <= 1


class TablePatternRecognizer(PatternRecognizer):
    """A pattern recognizer declared as a table: ``ENTITY``, ``PATTERNS`` (name, regex, score) and ``CONTEXT`` as
    class attributes, compiled case-sensitively (each pattern sets its own ``(?i:…)`` where it wants)."""

    ENTITY = ""
    PATTERNS: list[tuple[str, str, float]] = []
    CONTEXT: list[str] | None = None

    def __init__(self, supported_language: str = "en"):
        from presidio_analyzer import Pattern

        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, s) for n, r, s in self.PATTERNS],
            context=self.CONTEXT,
            supported_language=supported_language,
            global_regex_flags=0,
            name=type(self).__name__,
        )


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's ``EmailRecognizer`` with an offline domain check."""

    def validate_result(self, pattern_text: str) -> bool:  # noqa: D102
        return _OFFLINE_TLD(pattern_text).fqdn != ""


class LabelledValueRecognizer(EntityRecognizer):
    """An identifier written after a label: ``member ID W282001137``, ``VIN: 1HGCM…``, ``S/N 4XK-22``.

    ``labels`` is a regex of label words (matched case-insensitively); the value is a run of
    letters and digits (with single ``-``, ``/``, ``.`` or spaces between groups) holding at
    least ``min_digits`` digits, written within a few characters (``:``, ``#``, ``no.``) after
    the label. Only the value is reported, at ``score``.
    """

    VALUE = r"(?P<v>(?=[A-Za-z0-9/.\- ]*?\d)[A-Za-z0-9](?:[A-Za-z0-9]|[\-/.](?=[A-Za-z0-9])|[ ](?=[A-Za-z0-9]*\d)){2,40})"

    def __init__(self, *, entity: str, labels: str, score: float = 0.8, min_digits: int = 3, name: str,
                 supported_language: str = "en"):  # fmt: skip
        self.score = score
        self.min_digits = min_digits
        gap = r"(?:\s*(?:number|num|no|nr|n[ºo°]|#|id|code)\b\.?)?\s*[:#=\-]?\s*(?:no\.?\s*)?"
        self.regex = re.compile(rf"(?i:\b(?:{labels}))(?![A-Za-z]){gap}{self.VALUE}(?![\w\-])")
        super().__init__(supported_entities=[entity], supported_language=supported_language, name=name)

    def load(self) -> None:  # noqa: D102
        pass

    def analyze(self, text, entities, nlp_artifacts=None):  # noqa: D102
        out = []
        for m in self.regex.finditer(text):
            value = m.group("v").rstrip(" .-/")
            if sum(ch.isdigit() for ch in value) < self.min_digits:
                continue
            start = m.start("v")
            out.append(
                RecognizerResult(self.supported_entities[0], start, start + len(value), self.score,
                                 analysis_explanation=AnalysisExplanation(self.name, self.score),
                                 recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                                                       RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id})
            )  # fmt: skip
        return out


_PATTERNS_METHOD = "_PatternRecognizer__analyze_patterns"  # PatternRecognizer.__analyze_patterns, name-mangled


# Literal text every match of a recognizer's patterns contains: without it, no pattern can match.
# Presidio's URL patterns all need a dot before their top-level domain, its e-mail pattern an "@".
GATES: dict[str, re.Pattern] = {
    "UrlRecognizer": re.compile(r"\.[a-z]", re.IGNORECASE),
    "EmailRecognizer": re.compile("@"),
    "OfflineEmailRecognizer": re.compile("@"),
}


def skip_when_no_match(recognizer: EntityRecognizer) -> EntityRecognizer:
    """Let a pattern recognizer return at once on a text none of its patterns matches.

    Presidio's pattern loop costs several microseconds of timing, logging and
    bookkeeping per pattern and text even when nothing matches, which is most
    texts for most recognizers. Here a literal every match needs (:data:`GATES`: a dot
    before a URL's top-level domain, the "@" of an e-mail) is looked for, then each
    compiled pattern is searched;
    only if one matches (or a pattern is not compiled yet, or a search times
    out) does Presidio's own loop run, so results are the same by construction.
    Recognizers that are not plain pattern recognizers are returned unchanged.
    """
    full = getattr(recognizer, _PATTERNS_METHOD, None)
    if not isinstance(recognizer, PatternRecognizer) or full is None:
        return recognizer

    gate = GATES.get(type(recognizer).__name__)

    def analyze_patterns(text: str, flags: int | None = None):
        flags = flags if flags else recognizer.global_regex_flags
        if gate is not None and gate.search(text) is None:
            return []
        for pattern in recognizer.patterns:
            compiled = pattern.compiled_regex
            if compiled is None or pattern.compiled_with_flags != flags:
                return full(text, flags)
            try:
                if compiled.search(text, timeout=_REGEX_TIMEOUT) is not None:
                    return full(text, flags)
            except TimeoutError:
                return full(text, flags)
        return []

    setattr(recognizer, _PATTERNS_METHOD, analyze_patterns)
    return recognizer


class FastContextEnhancer(LemmaContextAwareEnhancer):
    """Presidio's lemma context enhancer, same rules, without its per-result linear scans.

    Presidio's version deep-copies every result and walks the token list from
    the start for each one (a list membership test per token), which is
    quadratic on long texts. Here the token of a match is found by bisection
    and the keywords are a set; words before the match (``context_prefix_count``),
    after it (``context_suffix_count``) and the caller's ``context`` words are
    matched against each recognizer's context words as Presidio does.
    """

    def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):  # noqa: D102
        import bisect

        if nlp_artifacts is None or not raw_results:
            return raw_results
        by_id = {r.id: r for r in recognizers}
        extra = [w.lower() for w in context] if context else []
        tokens = nlp_artifacts.tokens
        if tokens is None or len(tokens) == 0:
            return raw_results
        starts = list(nlp_artifacts.tokens_indices)
        ends = [a + len(tok) for a, tok in zip(starts, tokens, strict=True)]
        lemmas = [lem.lower() for lem in nlp_artifacts.lemmas]
        keywords = set(nlp_artifacts.keywords)
        for result in raw_results:
            meta = result.recognition_metadata or {}
            rec = by_id.get(meta.get(RecognizerResult.RECOGNIZER_IDENTIFIER_KEY))
            if rec is None or not rec.context or meta.get(RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY):
                continue
            if result.score >= self.MAX_SCORE:
                continue
            i = min(bisect.bisect_right(ends, result.start), len(tokens) - 1)
            words = self._collect(lemmas, keywords, i, self.context_prefix_count, -1)
            words += self._collect(lemmas, keywords, i, self.context_suffix_count, 1)
            words += extra
            word = self._find_supportive_word_in_context(words, rec.context, self.context_matching_mode)
            if word:
                result.score = min(
                    max(result.score + self.context_similarity_factor, self.min_score_with_context_similarity),
                    self.MAX_SCORE,
                )
                if result.analysis_explanation is not None:
                    result.analysis_explanation.set_supportive_context_word(word)
                    result.analysis_explanation.set_improved_score(result.score)
        return raw_results

    @staticmethod
    def _collect(lemmas: list[str], keywords: set[str], index: int, n_words: int, step: int) -> list[str]:
        out: list[str] = []
        remaining = n_words + 1  # the match's own token counts too, as in Presidio
        i = index
        while 0 <= i < len(lemmas) and remaining > 0:
            if lemmas[i] in keywords:
                out.append(lemmas[i])
                remaining -= 1
            i += step
        return out
