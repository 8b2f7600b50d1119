#!/usr/bin/env python3
"""Compares kube-score's and Checkov's findings with linter-exceptions.yaml (see independent-linters.sh).

  check-linters.py <exceptions.yaml> (<value set> <kube-score.json> <checkov.json>)...
"""
import json
import sys

import yaml


def kube_score_findings(path):
    for obj in json.load(open(path)):
        kind = obj["type_meta"]["kind"]
        for check in obj["checks"]:
            if check["skipped"] or check["grade"] >= 10:
                continue
            comments = "; ".join(f"{c.get('path', '')} {c.get('summary', '')}".strip() for c in check.get("comments") or [])
            yield kind, obj["object_meta"]["name"], check["check"]["id"], f"{check['check']['name']}: {comments}"


def checkov_findings(path):
    reports = json.load(open(path))
    for report in reports if isinstance(reports, list) else [reports]:
        if not isinstance(report, dict) or "results" not in report:
            continue
        for failed in report["results"]["failed_checks"]:
            kind, _, name = (failed["resource"].split(".") + ["", ""])[:3]
            yield kind, name, failed["check_id"], failed["check_name"]


def main():
    exceptions = yaml.safe_load(open(sys.argv[1]))
    used = [0] * len(exceptions)
    unexplained = []
    args = sys.argv[2:]
    totals = {}
    for i in range(0, len(args), 3):
        value_set, kube_score_json, checkov_json = args[i : i + 3]
        for tool, findings in (("kube-score", kube_score_findings(kube_score_json)), ("checkov", checkov_findings(checkov_json))):
            for kind, name, check, text in findings:
                totals[(tool, value_set)] = totals.get((tool, value_set), 0) + 1
                match = next(
                    (n for n, e in enumerate(exceptions)
                     if e["tool"] == tool and e["check"] == check and kind in e["kinds"]
                     and value_set in e.get("valueSets", [value_set])),
                    None,
                )
                if match is None:
                    unexplained.append(f"{value_set}: {tool} {check} on {kind} {name}: {text}")
                else:
                    used[match] += 1
    for entry, count in zip(exceptions, used):
        print(f"exception {entry['tool']} {entry['check']} ({', '.join(entry['kinds'])}): {count} findings")
    stale = [f"{e['tool']} {e['check']}" for e, count in zip(exceptions, used) if count == 0]
    for (tool, value_set), count in sorted(totals.items()):
        print(f"{value_set}: {tool}: {count} findings")
    if unexplained or stale:
        for line in unexplained:
            print(f"UNEXPLAINED {line}", file=sys.stderr)
        for line in stale:
            print(f"STALE exception {line}: matches no finding any more; remove it from linter-exceptions.yaml", file=sys.stderr)
        sys.exit(1)
    print(f"kube-score and Checkov: {sum(used)} findings over {len(args) // 3} value sets, each a listed exception")


main()
