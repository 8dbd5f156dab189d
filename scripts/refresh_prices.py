"""Refresh ``ctxpack/data/prices.json`` from LiteLLM's price map.

LiteLLM (BerriAI/litellm) keeps ``model_prices_and_context_window.json``, the price map most
tools read; its wheel ships the same file as
``litellm/model_prices_and_context_window_backup.json``. This script keeps the models ctxpack's
users call (the families below, with their dated names), converts them with
:meth:`ctxpack.cost.PriceTable.from_litellm`, and writes one row per model with the date and
source of its price. It runs during development only: ctxpack never reads the
network.

Usage (from the repository root)::

    python scripts/refresh_prices.py path/to/model_prices_and_context_window.json \\
        --source "LiteLLM 1.110.2" --date 2026-12-01
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from ctxpack.cost import PriceTable

OUT = Path(__file__).resolve().parents[1] / "ctxpack" / "data" / "prices.json"

# Base names kept, with any dated variant of them (name-YYYY-MM-DD or name-YYYYMMDD).
FAMILIES = {
    "openai": (
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "gpt-5.1",
        "gpt-5.2",
        "o1",
        "o3",
        "o3-mini",
        "o4-mini",
    ),
    "anthropic": (
        "claude-haiku-4-5",
        "claude-sonnet-4-5",
        "claude-sonnet-4-6",
        "claude-opus-4-5",
        "claude-opus-4-6",
        "claude-opus-4-7",
        "claude-opus-4-8",
    ),
    "google": ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"),
}
PRICING_PAGES = {
    "openai": "https://openai.com/api/pricing/",
    "anthropic": "https://docs.anthropic.com/en/docs/about-claude/pricing",
    "google": "https://ai.google.dev/gemini-api/docs/pricing",
}
# Where the minimum cacheable lengths (ctxpack.cost's KNOWN_MIN_CACHEABLE) were read.
MINIMUMS_PAGE = "https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching"
DATED = re.compile(r"^(?P<base>.+?)-(?:\d{4}-\d{2}-\d{2}|\d{8})$")
NOTE = (
    "Dollars per million tokens. OpenAI and Google bill no cache write: their writes are priced "
    "as plain input, their reads at the map's cached-input price (Google's implicit caching; "
    "explicit context caching also bills storage per hour, not modelled). Anthropic's "
    "cache_write_5m and cache_write_1h are its 5-minute and 1-hour cache writes. Gemini 2.5 "
    "Pro doubles its input price above 200k tokens of prompt: the row is the price up to 200k. "
    "context_window is the input window (LiteLLM's max_input_tokens). min_cacheable_tokens is "
    "the shortest prompt the model caches (Anthropic's prompt-caching guide; not in LiteLLM's "
    "map): 1,024 where the row does not say."
)


def provider_of(name: str) -> str | None:
    match = DATED.match(name)
    base = match.group("base") if match else name
    for provider, names in FAMILIES.items():
        if base in names:
            return provider
    return None


def refresh(source_map: Path, source: str, date: str) -> dict[str, Any]:
    raw = json.loads(source_map.read_text(encoding="utf-8"))
    chosen = {name: row for name, row in raw.items() if provider_of(name) is not None}
    missing = [n for names in FAMILIES.values() for n in names if n not in chosen]
    if missing:
        raise SystemExit(f"not in the map: {', '.join(missing)}")
    table = PriceTable.from_litellm(chosen, date=date, source=source)
    out: dict[str, Any] = {
        "_meta": {
            "date": date,
            "unit": "US dollars per million tokens",
            "sources": [source, *PRICING_PAGES.values(), MINIMUMS_PAGE],
            "note": NOTE,
        }
    }
    for name in sorted(table.prices, key=lambda n: (provider_of(n) or "", n)):
        provider = provider_of(name) or ""
        row = table.prices[name].model_copy(
            update={"date": date, "source": f"{source}; {PRICING_PAGES[provider]}"}
        )
        # Defaults left out: no window when unknown, no minimum when it is the usual 1,024.
        out[name] = row.model_dump(exclude_defaults=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("litellm_map", type=Path)
    parser.add_argument("--source", required=True, help="e.g. 'LiteLLM 1.110.2'")
    parser.add_argument("--date", required=True, help="when the map was taken (ISO date)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    table = refresh(args.litellm_map, args.source, args.date)
    lines = ["{"]
    items = list(table.items())
    for i, (name, row) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        indent = 2 if name == "_meta" else None
        text = json.dumps(row, indent=indent, ensure_ascii=False)
        text = text.replace("\n", "\n  ")
        lines.append(f"  {json.dumps(name)}: {text}{comma}")
    lines.append("}")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(items) - 1} models to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
