#!/usr/bin/env python3
"""Writes the username-profile fixtures from an independent PRECIS implementation.

    code_points.json  every code point 0..10FFFF as runs of equal values: the IdentifierClass derived
                      property and the rule that decided it (RFC 8264 §8), and for the code points the
                      class allows, their Bidi_Class and whether they are Greek, Hebrew or
                      Hiragana/Katakana/Han (the scripts RFC 5892's contextual rules ask about);
                      plus every fullwidth/halfwidth code point with its decomposition mapping
    profile.json      strings through the UsernameCaseMapped profile (RFC 8265 §3.3): the enforced
                      form, or the rule that refused the string

Made by precis_i18n (the Python implementation of RFC 8264/8265 by William Fisher) over
unicodedata2 at the Unicode version of the Swift standard library, so that the tests compare our
derivation from Swift's properties with another implementation's derivation from Unicode's own files.

Requirements: pip install precis-i18n==1.1.2 unicodedata2==17.0.0
Run from anywhere: python3 Tests/Fixtures/usernames/generate.py (the output is deterministic).
"""
import json
import pathlib
import random

import precis_i18n
import unicodedata2
from precis_i18n.derived import derived_property
from precis_i18n.unicode import UnicodeData

assert unicodedata2.unidata_version == "17.0.0", unicodedata2.unidata_version
here = pathlib.Path(__file__).resolve().parent
ucd = UnicodeData(unicodedata2)
profile = precis_i18n.get_profile("UsernameCaseMapped", unicodedata=unicodedata2)


def scripts(cp):
    if ucd.greek_script(cp):
        return "greek"
    if ucd.hebrew_script(cp):
        return "hebrew"
    if ucd.hiragana_katakana_han_script(cp):
        return "hiraganaKatakanaHan"
    return None


runs = []
for cp in range(0x110000):
    prop, rule = derived_property(cp, ucd)
    prop = "DISALLOWED" if prop == "FREE_PVAL" else prop
    allowed = prop in ("PVALID", "CONTEXTJ", "CONTEXTO")
    value = [prop, rule, unicodedata2.bidirectional(chr(cp)) if allowed else None, scripts(cp) if allowed else None]
    if runs and runs[-1][2:] == value and runs[-1][1] == cp - 1:
        runs[-1][1] = cp
    else:
        runs.append([cp, cp] + value)

width = []
for cp in range(0x110000):
    decomposition = unicodedata2.decomposition(chr(cp))
    if decomposition.startswith(("<wide>", "<narrow>")):
        mapped = [int(part, 16) for part in decomposition.split()[1:]]
        assert len(mapped) == 1
        width.append([cp, mapped[0]])

(here / "code_points.json").write_text(
    json.dumps({"unicodeVersion": unicodedata2.unidata_version, "runs": runs, "width": width}, separators=(",", ":"))
    + "\n"
)

# The strings of the issue, then names people have, then random strings from a pool of code points
# chosen to exercise every rule: mapping, case, normalization, each context rule, the Bidi Rule.
curated = [
    "carol", "Carol", "CAROL", "\uff43\uff41\uff52\uff4f\uff4c", "\uff23\uff21\uff32\uff2f\uff2c", "ca\u00adrol",
    "ca\u2060rol", "\ufeffcarol", "carol\u202e", "car\u200dol", "car\u200col", "ca\u200brol", "carol\u061c",
    "Jos\u00e9", "Jose\u0301", "JOS\u00c9", "jos\u00e9", "\u0130stanbul", "stra\u00dfe", "STRASSE",
    "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3", "\u03a3", "\u03b1\u03a3", "\u03a3\u03b1", "\u03b1\u03a3\u0301",
    "\u212bngstr\u00f6m", "\u212a", "\u2126mega", "\ufb01nn", "x\u00b2", "\u01c5ungla", "\u2163", "\u13a0\u13a1",
    "l\u00b7l", "a\u00b7l", "l\u00b7", "\u0375\u03b1", "\u0375a", "\u05d0\u05f3", "a\u05f3", "\u30ab\u30fb\u30ab",
    "a\u30fbb", "\u0661\u0662", "\u06f1\u06f2", "\u0661\u06f2", "\u0915\u094d\u200d\u0937", "\u0915\u094d\u200c\u0937",
    "\u0628\u200c\u0628", "\u05d0\u05d1", "\u05d0\u05d11", "1\u05d0", "\u05d0a", "a\u05d0", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "\u0628\u0663", "\u0628\u06f3", "\u0628\u0663\u06f3", "\u0628\u05b4", "\u05d0\u05b4", "\u0640\u0628",
    "\ud55c\uad6d\uc5b4", "\u1100\u1161", "\u4e2d\u6587", "\u3042\u3044", "\uff76\uff9e", "\uffe3", "\uffa1",
    "\u3000carol", "\uff10\uff11", "alice.smith", "alice-smith", "alice_smith", "alice+tag", "alice@example.com",
    "a b", "a\u00a0b", "a\tb", "\U0001f600", "\ue000", "\U000e0041", "\u0301a", "a\u0301", "\u00e9\u0301",
    "\u1e9e", "\u0149", "\u1f88", "\u1fbc", "\u0345", "\u03d0", "\u2c00",
]
pool = (
    list("aAzZ09.-_@+!~") + [" "]
    + ["\u00e9", "\u00c9", "\u00df", "\u00f1", "\u00d8", "\u0301", "\u0308", "\u0130"]
    + ["\u03a3", "\u03c3", "\u03c2", "\u0391", "\u03ac", "\u0375", "\u0345"]
    + ["\u0430", "\u04d0", "\u13a0"]
    + ["\u05d0", "\u05d1", "\u05f3", "\u05b4"]
    + ["\u0628", "\u062a", "\u0663", "\u06f3", "\u064e", "\u0640", "\u0661"]
    + ["\u0915", "\u094d", "\u200d", "\u200c"]
    + ["\u30ab", "\u30fb", "\u4e2d", "\u3042", "\u30fc"]
    + ["\uff21", "\uff43", "\uff11", "\uff76", "\uff9e"]
    + ["\u00ad", "\u2060", "\ufeff", "\u200b", "\u202e", "\u061c"]
    + ["\ufb01", "\u00b2", "\u216b", "\u212b", "\u212a", "\u2126", "\u01c5"]
    + ["\ud55c", "\u1100", "\u00b7", "l", "\U0001f600", "\ue000"]
)
rng = random.Random(8265)
generated = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 6))) for _ in range(1500)]

cases = []
seen = set()
for text in curated + generated:
    # Surrounding white space is trimmed before the profile (the application's step), so the
    # profile's own behaviour is what the fixture pins.
    if text in seen or text != text.strip() or not text:
        continue
    seen.add(text)
    try:
        cases.append({"input": text, "output": profile.enforce(text)})
    except UnicodeEncodeError as error:
        cases.append({"input": text, "error": error.reason.removeprefix("DISALLOWED/")})
(here / "profile.json").write_text(json.dumps({"cases": cases}, ensure_ascii=True, indent=1) + "\n")
print(f"{len(runs)} runs, {len(width)} width mappings, {len(cases)} strings")
