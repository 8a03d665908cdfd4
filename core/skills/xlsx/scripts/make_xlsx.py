#!/usr/bin/env python3
"""Build an .xlsx workbook from a JSON spec with openpyxl.

Usage: python3 make_xlsx.py SPEC.json OUT.xlsx      (SPEC may be '-' for stdin)

Spec:
{
  "sheets": [
    {
      "name": "Sales",                       # <= 31 chars, no []:*?/\\
      "rows": [["Region", "Q1", "Q2", "Total"],
               ["North", 120, 135, "=SUM(B2:C2)"],   # a string starting with '=' is a formula
               ["South", {"value": 99.5, "number_format": "0.00", "bold": true}, 101, "=SUM(B3:C3)"],
               ["Day", {"date": "2026-01-31"}]],       # ISO date / datetime
      "header": true,                        # bold + filled first row (default true)
      "column_widths": {"A": 18},            # or "auto" (default): fitted to the content
      "number_formats": {"B2:D3": "#,##0"},  # range or column letter -> Excel number format
      "freeze": "A2",                        # freeze panes at this cell (default: below the header)
      "autofilter": true,                    # filter buttons on the used range
      "merge": ["A10:D10"]
    }
  ]
}
Exit status: 0 written, 2 bad spec or arguments, 3 a required Python package is missing.
"""

import argparse
import datetime as dt
import json
import os
import re
import sys

PROG = "make_xlsx.py"

try:
    from openpyxl import Workbook
    from openpyxl.styles import Font, PatternFill
    from openpyxl.utils import get_column_letter
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'openpyxl' is not installed. Declare it in the "
        'environment\'s packages (config.packages.pip: ["openpyxl"]) and start a new session.\n'
    )
    sys.exit(3)


class SpecError(Exception):
    pass


def load_spec(path):
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {path}")
    except json.JSONDecodeError as e:
        raise SpecError(f"spec is not valid JSON: {e}")


BAD_SHEET_CHARS = re.compile(r"[\[\]:*?/\\]")
RANGE = re.compile(r"^[A-Z]{1,3}([0-9]+)?(:[A-Z]{1,3}([0-9]+)?)?$")


def cell_value(v, where):
    """A JSON cell -> (value, style dict)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v, {}
    if isinstance(v, dict):
        style = {k: v[k] for k in ("number_format", "bold", "italic", "fill", "color") if k in v}
        if "date" in v:
            try:
                s = str(v["date"])
                value = (
                    dt.datetime.fromisoformat(s)
                    if "T" in s or " " in s
                    else dt.date.fromisoformat(s)
                )
            except ValueError:
                raise SpecError(f"{where}.date: not an ISO date: {v['date']!r}")
            style.setdefault(
                "number_format",
                (
                    "yyyy-mm-dd"
                    if isinstance(value, dt.date) and not isinstance(value, dt.datetime)
                    else "yyyy-mm-dd hh:mm"
                ),
            )
            return value, style
        if "value" not in v:
            raise SpecError(f"{where}: a cell object needs 'value' or 'date'")
        inner = v["value"]
        if not (inner is None or isinstance(inner, (bool, int, float, str))):
            raise SpecError(f"{where}.value: must be a string, number, boolean or null")
        return inner, style
    raise SpecError(f"{where}: must be a string, number, boolean, null or a cell object")


def hex_color(c, where):
    s = str(c).lstrip("#").upper()
    if not re.fullmatch(r"[0-9A-F]{6}", s):
        raise SpecError(f"{where}: colors are 6 hex digits like 'FFEEAA'")
    return "FF" + s


def build(spec):
    if not isinstance(spec, dict) or not isinstance(spec.get("sheets"), list) or not spec["sheets"]:
        raise SpecError("spec.sheets: must be a non-empty list of sheets")
    wb = Workbook()
    wb.remove(wb.active)
    seen = set()
    summary = []
    for i, sh in enumerate(spec["sheets"]):
        where = f"spec.sheets[{i}]"
        if not isinstance(sh, dict):
            raise SpecError(f"{where}: must be an object")
        name = str(sh.get("name") or f"Sheet{i + 1}")
        if len(name) > 31 or BAD_SHEET_CHARS.search(name):
            raise SpecError(f"{where}.name: at most 31 characters, none of []:*?/\\")
        if name.lower() in seen:
            raise SpecError(f"{where}.name: duplicate sheet name {name!r}")
        seen.add(name.lower())
        ws = wb.create_sheet(title=name)
        rows = sh.get("rows", [])
        if not isinstance(rows, list):
            raise SpecError(f"{where}.rows: must be a list of rows")
        widths = {}
        for r, row in enumerate(rows):
            if not isinstance(row, list):
                raise SpecError(f"{where}.rows[{r}]: must be a list of cells")
            for c, raw in enumerate(row):
                value, style = cell_value(raw, f"{where}.rows[{r}][{c}]")
                cell = ws.cell(row=r + 1, column=c + 1, value=value)
                if "number_format" in style:
                    cell.number_format = str(style["number_format"])
                if style.get("bold") or style.get("italic") or "color" in style:
                    cell.font = Font(
                        bold=bool(style.get("bold")),
                        italic=bool(style.get("italic")),
                        color=(
                            hex_color(style["color"], f"{where}.rows[{r}][{c}].color")
                            if "color" in style
                            else None
                        ),
                    )
                if "fill" in style:
                    color = hex_color(style["fill"], f"{where}.rows[{r}][{c}].fill")
                    cell.fill = PatternFill("solid", start_color=color, end_color=color)
                shown = (
                    len(str(value))
                    if value is not None and not (isinstance(value, str) and value.startswith("="))
                    else 8
                )
                widths[c] = max(widths.get(c, 0), shown)
        header = sh.get("header", True) and len(rows) > 0
        if header:
            for cell in ws[1]:
                cell.font = Font(bold=True)
                cell.fill = PatternFill("solid", start_color="FFD9E1F2", end_color="FFD9E1F2")
        cw = sh.get("column_widths", "auto")
        if cw == "auto":
            for c, w in widths.items():
                ws.column_dimensions[get_column_letter(c + 1)].width = min(max(w + 2, 8), 60)
        elif isinstance(cw, dict):
            for col, w in cw.items():
                if not re.fullmatch(r"[A-Z]{1,3}", str(col)) or not isinstance(w, (int, float)):
                    raise SpecError(
                        f"{where}.column_widths.{col}: keys are column letters, values numbers"
                    )
                ws.column_dimensions[col].width = w
        else:
            raise SpecError(f"{where}.column_widths: 'auto' or an object like {{\"A\": 18}}")
        for rng, fmt in (sh.get("number_formats") or {}).items():
            if not RANGE.match(str(rng)):
                raise SpecError(
                    f"{where}.number_formats: {rng!r} is not a range like 'B2:D9' or a column like 'B'"
                )
            target = ws[rng]
            cells = target if isinstance(target, tuple) else (target,)
            for item in cells:
                for cell in (item if isinstance(item, tuple) else (item,)):
                    if cell.row > 1 or not header:
                        cell.number_format = str(fmt)
        freeze = sh.get("freeze", "A2" if header else None)
        if freeze:
            if not re.fullmatch(r"[A-Z]{1,3}[0-9]+", str(freeze)):
                raise SpecError(f"{where}.freeze: a cell like 'A2'")
            ws.freeze_panes = freeze
        if sh.get("autofilter") and rows:
            ws.auto_filter.ref = ws.dimensions
        for m in sh.get("merge") or []:
            if not RANGE.match(str(m)) or ":" not in str(m):
                raise SpecError(f"{where}.merge: {m!r} is not a range like 'A1:C1'")
            ws.merge_cells(m)
        summary.append(f"{name} ({len(rows)} rows)")
    return wb, summary


def main():
    ap = argparse.ArgumentParser(
        prog=PROG, description="Build an .xlsx workbook from a JSON spec (see the docstring)."
    )
    ap.add_argument("spec", help="JSON spec file, or - for stdin")
    ap.add_argument("out", help="output .xlsx path, e.g. /mnt/session/outputs/report.xlsx")
    args = ap.parse_args()
    if not args.out.lower().endswith(".xlsx"):
        ap.error("OUT must end in .xlsx")
    try:
        wb, summary = build(load_spec(args.spec))
    except SpecError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        sys.exit(2)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    wb.save(args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes): " + ", ".join(summary))


if __name__ == "__main__":
    main()
