"""Seeded generator of the bundled sample data (CORE's stock schema, CORE's CSV format).

    python examples/generate.py [--events N] [--seed S] [--out examples/stocks/events.csv]
        [--parts 4 --parts-dir examples/stocks/parts]

Also writes the same events split into ``--parts`` files of unequal sizes (``events-0.csv``,
``events-1.csv``, ...; each with the header), the input of the main job (scripts/main.sh):
read in the order of their names, they are ``events.csv`` again.
"""

from __future__ import annotations

import argparse
import csv
import os
import random

TICKERS = ["INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT",
           "AAPL", "GOOG", "AMZN", "IBM", "NVDA", "TXN", "QCOM", "EBAY", "ADBE", "SUNW"]
COLUMNS = ["event_type", "id", "name", "volume", "price", "stock_time"]


def generate(events: int, seed: int) -> list[list[object]]:
    """Rows of BUY/SELL events: tickers drawn with a skew, prices as a random walk per ticker."""
    rng = random.Random(seed)
    prices = {t: rng.uniform(10, 60) for t in TICKERS}
    weights = [1.0 / (rank + 1) ** 0.6 for rank in range(len(TICKERS))]
    rows = []
    stock_time = 0
    for event_id in range(events):
        stock_time += rng.randint(0, 120)
        name = rng.choices(TICKERS, weights)[0]
        prices[name] = max(1.0, prices[name] * rng.uniform(0.98, 1.02))
        kind = "BUY" if rng.random() < 0.55 else "SELL"
        volume = rng.choice([100, 200, 500, 1000, 2000, 4000])
        rows.append([kind, event_id, name, volume, round(prices[name], 2), stock_time])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="examples/stocks/events.csv")
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--parts-dir", default="examples/stocks/parts")
    args = parser.parse_args()
    rows = generate(args.events, args.seed)
    write(args.out, rows)
    if args.parts:
        os.makedirs(args.parts_dir, exist_ok=True)
        # Unequal parts (Spark does not read files in the order of their names, nor by size).
        weights = list(range(1, args.parts + 1))
        start = 0
        for index, weight in enumerate(weights):
            end = len(rows) if index == args.parts - 1 else start + len(rows) * weight // sum(weights)
            write(os.path.join(args.parts_dir, f"events-{index}.csv"), rows[start:end])
            start = end


def write(path: str, rows: list[list[object]]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)


if __name__ == "__main__":
    main()
