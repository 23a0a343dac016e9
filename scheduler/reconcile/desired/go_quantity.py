"""``resource.ParseQuantity`` (k8s.io/apimachinery v0.35.5), as it fills a ``Quantity``'s unexported fields.

go-spew prints a Quantity's internals (``i``, ``d``, ``s``, ``Format``), so the pod-template hash depends on exactly
how the string was parsed: scaled int64 or arbitrary-precision decimal, and whether the canonical string was
cached. This follows ``parseQuantityString`` and ``ParseQuantity`` step by step (``api.quantity`` is the project's
own quantity arithmetic; this is Go's storage, for hashing only).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["quantity_fields"]

_INT64 = (-(2**63), 2**63 - 1)


_DECIMAL = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def _split(text: str) -> tuple[bool, str, str, str, str] | None:
    """``parseQuantityString``: sign, the numeric prefix, integer digits (leading zeros dropped), fraction,
    suffix; None where Go returns ErrFormatWrong."""
    positive, pos, end = True, 0, len(text)
    if text[:1] in "+-":
        positive, pos = text[0] != "-", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos].isdigit():
        pos += 1
    number = text[start:pos] or "0"
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isdigit():
            pos += 1
        fraction = text[start:pos]
    value, suffix_start = text[:pos], pos
    while pos < end and text[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit():
        pos += 1
    return (positive, value, number, fraction, text[suffix_start:]) if pos >= end else None


def _suffix(suffix: str) -> tuple[int, int, str] | None:
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], "DecimalSI"
    if suffix in _BINARY:
        return 2, _BINARY[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE" and suffix[1:].lstrip("+-").isdigit() and suffix[1:2] != "+":
        return 10, int(suffix[1:]), "DecimalExponent"
    return None


def quantity_fields(raw: Any) -> dict[str, Any]:
    """The Go fields of ``resource.Quantity`` after ``UnmarshalJSON``: ``i``, ``d``, ``s``, ``Format``."""
    text = (raw if isinstance(raw, str) else json.dumps(raw)).strip()
    if text == "0":
        return {"Format": "DecimalSI", "s": "0"}
    parts = _split(text) if text else None
    interpreted = _suffix(parts[4]) if parts else None
    if parts is None or interpreted is None:
        return {}  # Go refuses the object; such a PodCliqueSet never reaches Grove (our validation refuses it too)
    positive, value, number, fraction, _ = parts
    base, exponent, form = interpreted
    scale, mantissa, precision = 0, 1, 0
    if form in ("DecimalExponent", "DecimalSI"):
        scale, precision = exponent, 18 - (len(number) + len(fraction))
    elif exponent >= 0 and not fraction:
        mantissa = 1 << exponent
        precision = 15 - len(number) - int(exponent * 3 / 10) - 1
    else:
        precision = -1
    if precision >= 0:
        scale -= len(fraction)
        shifted = number + fraction
        if scale >= -9 and int(shifted) <= _INT64[1]:
            result = int(shifted) * mantissa
            if _INT64[0] <= result <= _INT64[1]:
                result = result if positive else -result
                fields: dict[str, Any] = {"i": {"value": result, "scale": scale}, "Format": form}
                if form == "BinarySI":
                    if exponent % 10 == 0 and int(shifted) & 0x07:
                        fields["s"] = text
                elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                    fields["s"] = text
                return fields
    return _dec_quantity(value, base=base, exponent=exponent, form=form)


def _dec_quantity(value: str, *, base: int, exponent: int, form: str) -> dict[str, Any]:
    """The ``inf.Dec`` path of ParseQuantity: rounded up to nano precision (our arithmetic; see module doc)."""
    negative = value.startswith("-")
    digits = value.lstrip("+-")
    whole, _, fraction = digits.partition(".")
    unscaled, scale = int((whole + fraction) or "0"), len(fraction)
    if base == 10:
        scale -= exponent
    else:
        unscaled <<= exponent
    if unscaled:
        if scale > 9:  # QuoRound to scale 9, rounding away from zero
            factor = 10 ** (scale - 9)
            unscaled = -(-unscaled // factor)
        else:
            unscaled *= 10 ** (9 - scale)
        scale = 9
    if form == "BinarySI" and unscaled and unscaled < 10**scale:
        form = "DecimalSI"  # 0 < amount < 1
    words = []
    magnitude = unscaled
    while magnitude:
        words.append(magnitude & 0xFFFFFFFFFFFFFFFF)
        magnitude >>= 64
    dec = {"unscaled": {"neg": negative and unscaled != 0, "abs": words or None}, "scale": scale}
    return {"d": {"Dec": dec}, "Format": form}
