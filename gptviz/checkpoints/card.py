"""card.json: what produced a checkpoint (corpus, steps, losses, the training settings).

Its fields are free, but those the pages compute with are checked when the checkpoint is
loaded, as the config's are: ``train_config`` (TrainConfig's fields, the seed within what
``torch.manual_seed`` takes, since the untrained twin and the replay's step 0 are rebuilt
from it), ``steps``/``kept_step``, the losses of ``evals`` and the ``prompt``. A card that
fails gets a CheckpointError naming the field, never a page that raises later.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from gptviz.checkpoints.errors import CheckpointError
from gptviz.i18n import _
from gptviz.model import TrainConfig

CARD = "card.json"
SEEDS = (-(1 << 63), (1 << 64) - 1)  # the seeds torch.manual_seed accepts
_TYPES = {"int": int, "float": (int, float), "str": str, "bool": bool}
_JSON = {dict: "an object", list: "an array", str: "a string", int: "an integer",
         float: "a number", bool: "true or false", type(None): "null"}
_LOSSES = ("train_loss", "val_loss", "induction_score")  # numbers (or null) per evaluation


def _kind(value: Any) -> str:
    """What JSON calls the type of ``value``, e.g. 'an array'."""
    return _JSON.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    """isinstance, where true and false are not numbers (as in TrainConfig's own check)."""
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def _count(value: Any) -> bool:
    return _is(value, int) and value >= 0


def check_card(card: Any) -> dict[str, Any]:
    """``card`` (parsed card.json) if the fields the pages use are what they need.

    >>> check_card({"steps": 5, "train_config": {"seed": 7}, "corpus": "a.txt"})["steps"]
    5
    >>> try:
    ...     check_card({"train_config": {"seed": 2**70}})
    ... except CheckpointError as exc:
    ...     print(exc)
    card.json: train_config.seed is 1,180,591,620,717,411,303,424; a seed is an integer from
    -2**63 to 2**64 - 1.
    """
    if not isinstance(card, dict):
        raise CheckpointError(_("{card} must hold a JSON object, not {card1}.").format(
                                  card=CARD, card1=_kind(card)))
    if "train_config" in card:
        _check_train_config(card["train_config"])
    for key in ("steps", "kept_step"):
        if key in card and not _count(card[key]):
            raise CheckpointError(_("{card}: {key} must be a whole number of "
                                    "steps, not {card1} ({card2}).").format(
                                      card=CARD, key=key, card1=_kind(card[key]),
                                      card2=_shown(card[key])))
    if "prompt" in card and not isinstance(card["prompt"], str):
        raise CheckpointError(_("{card}: prompt must be a string, not {prompt}.").format(
                                  card=CARD, prompt=_kind(card['prompt'])))
    if "evals" in card:
        _check_evals(card["evals"])
    return card


def _check_train_config(tc: Any) -> None:
    if not isinstance(tc, dict):
        raise CheckpointError(_("{card}: train_config must be a JSON object (the "
                                "training settings by name), not {tc}.").format(
                                  card=CARD, tc=_kind(tc)))
    for f in fields(TrainConfig):
        if f.name in tc and not _is(tc[f.name], _TYPES.get(str(f.type), object)):
            raise CheckpointError(_("{card}: train_config.{name} must be {type}, "
                                    "not {tc} ({tc1}).").format(
                                      card=CARD, name=f.name, type=f.type, tc=_kind(tc[f.name]),
                                      tc1=_shown(tc[f.name])))
    if "seed" in tc and not SEEDS[0] <= (seed := tc["seed"]) <= SEEDS[1]:
        shown = f"{seed:,}" if abs(seed) < 10**30 else f"about 10**{len(str(abs(seed))) - 1}"
        raise CheckpointError(_("{card}: train_config.seed is {shown}; a seed is "
                                "an integer from -2**63 to 2**64 - 1.").format(
                                  card=CARD, shown=shown))


def _check_evals(evals: Any) -> None:
    if not isinstance(evals, list) or not all(isinstance(e, dict) for e in evals):
        raise CheckpointError(_("{card}: evals must be a list of objects (one per "
                                "evaluation: step, train_loss, val_loss).").format(card=CARD))
    for k, e in enumerate(evals):
        if "step" in e and not _count(e["step"]):
            raise CheckpointError(_("{card}: evals[{k}].step must be a whole "
                                    "number of steps.").format(card=CARD, k=k))
        for key in _LOSSES:
            if e.get(key) is not None and not _is(e[key], (int, float)):
                raise CheckpointError(_("{card}: evals[{k}].{key} must be a "
                                        "number or null, not {e}.").format(
                                          card=CARD, k=k, key=key, e=_kind(e[key])))

