"""Seeded workloads and a runner that measures ceql side by side with a columnar scan."""
