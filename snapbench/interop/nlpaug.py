"""nlpaug both ways (the ``nlpaug`` extra).

**snapbench text operators as nlpaug augmenters**, to use them inside ``naf.Sequential`` /
``naf.Sometimes`` flows::

    import nlpaug.flow as naf
    from snapbench.interop.nlpaug import SnapbenchAugmenter

    flow = naf.Sequential([SnapbenchAugmenter("char_swap", entity="fish"), SnapbenchAugmenter("sent_add")])
    flow.augment("What kind of fish is this?")

A :class:`SnapbenchAugmenter` calls :func:`snapbench.corruptions.corrupt_text` with its ``seed`` and,
as the query key, the text's own SHA-256 (or a fixed ``key``), so the same text always gets the same
edit, whatever the call order, thread or process.  (nlpaug's *flows* draw ``Sometimes``' coin from
Python's global ``random``; seed it yourself if the flow must be reproducible.)

**nlpaug augmenters as snapbench text operators**, e.g. keyboard or OCR noise::

    import nlpaug.augmenter.char as nac
    from snapbench.interop.nlpaug import register_nlpaug_operator

    register_nlpaug_operator("nlpaug_keyboard", nac.KeyboardAug(aug_char_max=1, aug_word_max=1))
    corrupt_text("What kind of fish is this?", "nlpaug_keyboard", entity="fish", seed=0, key="q1")
    # condition id: txt/nlpaug_keyboard

nlpaug draws from Python's *global* ``random`` (and numpy's global generator in places).  To make
that deterministic without touching anyone else's randomness, each call runs under a module lock:
save the global ``random`` and numpy states, seed both with an integer drawn from snapbench's
generator for (seed, query key, operator, attempt) (:func:`snapbench.core.seeding.text_rng`, a stable
BLAKE2b hash), run the augmenter, restore the saved states.  So outputs are identical in any
process and for any worker count, and the caller's global random state is exactly what it was.
Threads calling nlpaug operators are serialised by the lock (nlpaug is not thread-safe anyway).

By default the augmenter edits only the **entity** span (``scope="entity"``), like snapbench's own
operators, and the rest of the question stays byte-identical; ``scope="question"`` hands it the
whole question (nlpaug's tokenizer may then change spacing around punctuation).  An augmenter that
leaves the text unchanged is retried with the next attempt's seed, and the query is recorded as a
skip after :data:`~snapbench.corruptions.text.MAX_ATTEMPTS` (e.g. ``KeyboardAug`` skips words shorter
than its ``min_char``).
"""

from __future__ import annotations

import hashlib
import random
import threading
from typing import Any, Literal

import numpy as np

try:
    from nlpaug.base_augmenter import Augmenter as _Augmenter
    from nlpaug.util import Action as _Action
    from nlpaug.util import Method as _Method
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from ..core.install_hint import install_hint

    raise ImportError(f"snapbench.interop.nlpaug needs nlpaug: {install_hint('nlpaug')}") from exc

from ..core.errors import ConfigError, InputError
from ..core.validate import choice
from ..corruptions import corrupt_text, register_text_operator

__all__ = ["NlpaugOperator", "SnapbenchAugmenter", "register_nlpaug_operator"]

# One lock for every nlpaug call: the global RNG states are process-wide, so two wrapped augmenters
# must not interleave.  Module-level, so operator objects holding an augmenter stay picklable.
_LOCK = threading.RLock()


class SnapbenchAugmenter(_Augmenter):
    """An nlpaug augmenter applying one of snapbench's text operators (see ``snapbench conditions``).

    Args:
        operator: a registered text operator (``char_add`` ... ``sent_replace``, or a user one).
        entity: the word(s) to corrupt; ``None`` = the last non-stopword word of each text.
        seed: the snapbench seed.
        key: fixed query key; ``None`` (default) = the SHA-256 of the text, so each distinct text
            gets its own deterministic edit.
        errors: ``"raise"`` (default) raises snapbench's error when the entity is not in a text or
            no edit is possible; ``"keep"`` returns such a text unchanged (nlpaug's convention).
    """

    def __init__(
        self,
        operator: str,
        entity: str | None = None,
        seed: int = 0,
        *,
        key: str | None = None,
        errors: Literal["raise", "keep"] = "raise",
        name: str | None = None,
        verbose: int = 0,
    ) -> None:
        from ..corruptions.text import text_operator

        operator = text_operator(operator).name  # an unknown name is an error listing the known ones
        choice(errors, ("raise", "keep"), "errors")
        super().__init__(
            name=name or f"Snapbench_{operator}", method=_Method.SENTENCE, action=_Action.SUBSTITUTE,
            aug_min=1, aug_max=1, aug_p=1.0, verbose=verbose,
        )
        self.operator = operator
        self.entity = entity
        self.seed = int(seed)
        self.key = key
        self.errors = errors

    def _key(self, text: str) -> str:
        return self.key if self.key is not None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def substitute(self, data: str) -> str:
        if not isinstance(data, str):
            raise InputError(f"{self.name}: expected a str, got {type(data).__name__}")
        try:
            return corrupt_text(data, self.operator, entity=self.entity, seed=self.seed, key=self._key(data))
        except ValueError:
            if self.errors == "keep":
                return data
            raise

    @classmethod
    def clean(cls, data: Any) -> Any:
        return data  # no whitespace normalisation: snapbench edits the text exactly as given

    @classmethod
    def is_duplicate(cls, dataset: list, data: Any) -> bool:
        return any(d == data for d in dataset)


def _seeded_call(augmenter: Any, text: str, seed: int) -> str:
    """Run ``augmenter.augment(text)`` with the global RNGs seeded by ``seed``, restoring them after."""
    with _LOCK:
        py_state = random.getstate()
        np_state = np.random.get_state()
        try:
            random.seed(seed)
            np.random.seed(seed)
            out = augmenter.augment(text)
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
    if isinstance(out, list):
        out = out[0] if out else text
    if not isinstance(out, str):
        raise ConfigError(f"nlpaug augmenter {type(augmenter).__name__} returned {type(out).__name__}, expected str",
                          param="augmenter")
    return out


class NlpaugOperator:
    """A snapbench text operator (``fn(text, span, rng) -> (new_text, params)``) wrapping an nlpaug augmenter.

    A module-level class holding the augmenter (not a closure), so the registered operator pickles
    and can be shipped to the worker processes of a multi-process run.
    """

    def __init__(self, name: str, augmenter: Any, *, scope: Literal["entity", "question"] = "entity") -> None:
        if not hasattr(augmenter, "augment"):
            raise ConfigError(f"nlpaug operator {name!r}: expected an nlpaug augmenter, got {type(augmenter).__name__}",
                              param="augmenter")
        choice(scope, ("entity", "question"), "scope")
        self.name = name
        self.augmenter = augmenter
        self.scope = scope

    def __call__(self, text: str, span: tuple[int, int], rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
        # 31 bits: numpy's legacy global seed must be < 2**32 and Python's accepts any int.
        seed = int(rng.integers(0, 2**31 - 1))
        params: dict[str, Any] = {"nlpaug": type(self.augmenter).__name__, "scope": self.scope, "nlpaug_seed": seed}
        if self.scope == "question":
            return _seeded_call(self.augmenter, text, seed), params
        s, e = span
        new_span = _seeded_call(self.augmenter, text[s:e], seed)
        params["entity_new"] = new_span
        return text[:s] + new_span + text[e:], params


def register_nlpaug_operator(
    name: str, augmenter: Any, *, scope: Literal["entity", "question"] = "entity", replace: bool = False
) -> NlpaugOperator:
    """Register an nlpaug augmenter as snapbench text operator ``name`` (condition ``txt/<name>``).

    Then :func:`~snapbench.corruptions.corrupt_text` ``(text, name, entity=..., seed=..., key=...)``
    applies it deterministically (see the module docstring for the seeding).  ``scope`` chooses
    whether the augmenter sees the entity span (default) or the whole question.  Returns the
    (picklable) operator object.
    """
    op = NlpaugOperator(name, augmenter, scope=scope)
    register_text_operator(name, replace=replace)(op)
    return op
