"""Seeded generator of the bundled sample data (CORE's stock schema, CORE's CSV format).

    python examples/generate.py [--events N] [--seed S] [--out examples/stocks/events.csv]
"""

from __future__ import annotations

import argparse
import csv
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
    args = parser.parse_args()
    with open(args.out, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(generate(args.events, args.seed))


if __name__ == "__main__":
    main()
