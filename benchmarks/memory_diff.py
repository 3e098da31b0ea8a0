"""What grew in a process between two of the soak's memory probes (``bench_soak
--memory-probe DIR``): the allocation sites that grew most (by traceback) and the object
types whose counts grew.

    python -m benchmarks.memory_diff DIR [--from N] [--top 15]

For each process that wrote at least two probes: its command line, RSS and traced memory at
probe ``N`` (default: the middle one) and at its last, then the sites and types. Compare
from a probe after the soak's restarts, so the diff is the steady state's growth.
"""

from __future__ import annotations

import argparse
import json
import tracemalloc
from collections import defaultdict
from pathlib import Path

IGNORED = (tracemalloc.__file__, "<frozen importlib._bootstrap>", "sitecustomize.py")


def probes(directory: Path) -> dict[str, list[Path]]:
    """Each process's probe stems (``<pid>-<n>``), in order."""
    by_pid: dict[str, list[Path]] = defaultdict(list)
    for stem in sorted(directory.glob("*.json")):
        by_pid[stem.name.split("-")[0]].append(stem.with_suffix(""))
    return {pid: stems for pid, stems in by_pid.items() if len(stems) >= 2}


def diff(first: Path, last: Path, top: int) -> None:
    """What grew from probe ``first`` to probe ``last`` (stems) of one process."""
    before, after = (json.loads(s.with_suffix(".json").read_text()) for s in (first, last))
    hours = (after["time"] - before["time"]) / 3600
    print(" ".join(Path(a).name for a in after["argv"][:3]))
    traced = (
        f", traced {before['traced_mib']:.2f} → {after['traced_mib']:.2f} MiB"
        if after.get("traced_mib") is not None
        else ""
    )
    print(
        f"  {first.name} → {last.name} ({hours * 60:.1f} min): "
        f"RSS {before['rss_mib']:.1f} → {after['rss_mib']:.1f} MiB{traced}"
    )
    # Probes of the first version had neither.
    for key, value in after.get("pymalloc", {}).items():
        print(f"  pymalloc {key}: {before.get('pymalloc', {}).get(key)} → {value}")
    for key, value in after.get("malloc_mib", {}).items():
        was = before.get("malloc_mib", {}).get(key)
        print(f"  malloc {key}: {'?' if was is None else f'{was:.2f}'} → {value:.2f} MiB")
    trims = after.get("trims")
    if trims and trims["count"]:
        print(
            f"  malloc_trim: {trims['count']} calls, {trims['seconds'] * 1000:.0f} ms in all, "
            f"longest {trims['longest'] * 1000:.1f} ms"
        )
    lengths = {(c["type"], tuple(c["sample"])): c["length"] for c in before.get("largest", [])}
    for container in after.get("largest", [])[:top]:
        was = lengths.get((container["type"], tuple(container["sample"])))
        print(
            f"  {container['type']} of {was if was is not None else '?'} → "
            f"{container['length']}: {', '.join(container['sample'])}"
        )
    if not first.with_suffix(".snap").exists() or not last.with_suffix(".snap").exists():
        _objects(before, after, top)
        return
    filters = [tracemalloc.Filter(False, pattern) for pattern in IGNORED]
    old, new = (
        tracemalloc.Snapshot.load(str(s.with_suffix(".snap"))).filter_traces(filters)
        for s in (first, last)
    )
    for stat in new.compare_to(old, "traceback")[:top]:
        if stat.size_diff <= 0:
            break
        print(f"  +{stat.size_diff / 1024:.1f} KiB in {stat.count_diff:+d} blocks")
        for line in stat.traceback.format(limit=6, most_recent_first=True):
            print("     ", line)
    _objects(before, after, top)


def _objects(before: dict, after: dict, top: int) -> None:
    """The object types whose counts grew most."""
    grown = {
        name: count - before["objects"].get(name, 0)
        for name, count in after["objects"].items()
        if count > before["objects"].get(name, 0)
    }
    for name, growth in sorted(grown.items(), key=lambda item: -item[1])[:top]:
        print(f"  objects {name}: +{growth} (now {after['objects'][name]})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--from", dest="start", type=int, help="the probe to diff from")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for stems in probes(args.directory).values():
        start = args.start if args.start is not None else len(stems) // 2
        diff(stems[min(start, len(stems) - 2)], stems[-1], args.top)


if __name__ == "__main__":
    main()
