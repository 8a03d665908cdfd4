#!/usr/bin/env python3
"""Print the contents of an .xlsx workbook (to check a result, or to read an input).

Usage: python3 read_xlsx.py IN.xlsx [--sheet NAME] [--max-rows N] [--values] [--json]

Default output: one block per sheet, "## <name> (<dimensions>)", then one line per row with
cells separated by tabs; formulas print as their text ('=SUM(B2:C2)').
--values  print the values Excel/LibreOffice cached when they last saved the file instead of
          formulas (a workbook written by openpyxl has no cached values: those cells print empty)
--json    {"sheets": [{"name", "dimensions", "rows": [[...]]}]}
Exit status: 0 read, 2 bad arguments or unreadable file, 3 a required Python package is missing.
"""

import argparse
import datetime as dt
import json
import sys

PROG = "read_xlsx.py"

try:
    from openpyxl import load_workbook
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'openpyxl' is not installed. Declare it in the "
        'environment\'s packages (config.packages.pip: ["openpyxl"]) and start a new session.\n'
    )
    sys.exit(3)


def plain(v):
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return v.isoformat()
    return v


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Print an .xlsx workbook's cells.")
    ap.add_argument("path")
    ap.add_argument("--sheet", help="only this sheet")
    ap.add_argument("--max-rows", type=int, default=200, help="rows per sheet (default 200)")
    ap.add_argument("--values", action="store_true", help="cached values instead of formulas")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args()
    try:
        wb = load_workbook(args.path, data_only=args.values, read_only=False)
    except Exception as e:  # not a zip, not a workbook, missing file
        sys.stderr.write(f"{PROG}: error: cannot open {args.path} as an .xlsx workbook: {e}\n")
        sys.exit(2)
    names = wb.sheetnames
    if args.sheet:
        if args.sheet not in names:
            sys.stderr.write(f"{PROG}: error: no sheet {args.sheet!r}; sheets: {names}\n")
            sys.exit(2)
        names = [args.sheet]
    out = []
    for name in names:
        ws = wb[name]
        rows = []
        for i, row in enumerate(ws.iter_rows(values_only=True)):
            if i >= args.max_rows:
                break
            rows.append([plain(v) for v in row])
        out.append({"name": name, "dimensions": ws.dimensions, "max_row": ws.max_row, "rows": rows})
    if args.json:
        print(json.dumps({"sheets": out}, ensure_ascii=False, default=str))
        return
    for sheet in out:
        print(f"## {sheet['name']} ({sheet['dimensions']})")
        for row in sheet["rows"]:
            print("\t".join("" if v is None else str(v) for v in row))
        if sheet["max_row"] > len(sheet["rows"]):
            print(f"... {sheet['max_row'] - len(sheet['rows'])} more rows (--max-rows)")


if __name__ == "__main__":
    main()
