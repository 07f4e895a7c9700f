"""From uploaded bytes to a table of strings: size limit, decompression, encoding, delimiter.

Everything is read as text (``dtype=str``) so that codes keep their leading zeros (LODES geocodes,
Irish ED codes) and every value can be validated with a message that quotes it as the user wrote it.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpcore.data.importing.notices import Report, rows_phrase

#: Largest upload accepted, in bytes (100 MB: about 6 million rows of a long-format file, or a
#: whole US state's LODES file gzip-compressed). Streamlit's own upload limit must be at least this.
MAX_UPLOAD_BYTES = 100 * 1024 * 1024

#: Most columns a file may have. Every format needs a handful; a matrix with more destinations
#: than this is better uploaded in the long format.
MAX_COLUMNS = 1000

#: What parsing costs, measured with ``bench/bench_import_memory.py`` (peak resident memory of an
#: import in a fresh process): a fixed part, twice the text (the upload's bytes and the decoded
#: text), and per cell of the table (lines × columns) up to 48 bytes for files of a few columns
#: (long format: 1 M rows took 177 MB, 7 M rows — 94 MB, the upload limit — 1,076 MB) and up to
#: 170 for a matrix, whose every cell becomes a number (12,000 × 999: 1,822 MB). A file whose
#: header has more than :data:`WIDE_COLUMNS` columns is costed as a matrix.
PARSE_FIXED_BYTES = 100 * 2 ** 20
PARSE_CELL_BYTES = 48
PARSE_WIDE_CELL_BYTES = 170
WIDE_COLUMNS = 20

#: Most characters in one CSV value: the limit of Python's csv module (``csv.field_size_limit``),
#: far above any zone name or count.
MAX_FIELD_CHARS = csv.field_size_limit()

#: A gzip-compressed upload is decompressed in pieces of this size, so that one expanding far
#: beyond the limit (a "zip bomb") is stopped after reading the limit, never more.
_GUNZIP_CHUNK = 1 << 20

#: Control characters other than tab, line feed and carriage return: text files have almost none.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

#: Excel's first line naming the separator ("sep=;"), optionally in quotes.
_SEPARATOR_LINE = re.compile(r'"?sep=(.)"?', re.IGNORECASE)

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}

_BINARY_SIGNATURES = {
    b"PK\x03\x04": ("a ZIP archive or an Excel workbook (.xlsx)",
                    "Unzip it, or open it in a spreadsheet and use “Save as → CSV (UTF-8)”."),
    b"\xd0\xcf\x11\xe0": ("an old Excel workbook (.xls)",
                          "Open it in a spreadsheet and use “Save as → CSV (UTF-8)”."),
    b"%PDF": ("a PDF document", "Export the table from its source as CSV instead."),
    b"PAR1": ("a Parquet file", "Convert it to CSV, e.g. pandas.read_parquet(...).to_csv(...)."),
}


@dataclass
class Table:
    """A delimited text file split into header and data cells, all strings as written.

    ``data`` has one column per header field (positional labels 0…k-1); ``rows`` gives each data
    row's number as a spreadsheet shows it (header = row 1), accounting for leading blank lines and
    values that span lines. Blank header cells are named "column N" and listed in ``unnamed``.
    """

    file: str
    header: list[str]
    unnamed: list[int]
    data: pd.DataFrame
    rows: np.ndarray
    delimiter: str
    encoding: str
    _positions: dict | None = field(default=None, init=False, repr=False)

    def position(self, name: str) -> int:
        """The column's position (the first, if the header repeats the name)."""
        if self._positions is None:
            self._positions = {}
            for i, column in enumerate(self.header):
                self._positions.setdefault(column, i)
        return self._positions[name]

    def take(self, names: list[str], report: Report) -> tuple[pd.DataFrame, np.ndarray]:
        """The named columns, trimmed and without empty rows (see :meth:`take_positions`)."""
        frame, rows = self.take_positions([self.position(name) for name in names], report)
        frame.columns = names
        return frame, rows

    def take_positions(self, positions: list[int], report: Report
                       ) -> tuple[pd.DataFrame, np.ndarray]:
        """Columns by position with surrounding whitespace trimmed and all-empty rows dropped.

        Returns the frame (columns labelled by position) and the spreadsheet row numbers of its
        rows. Both corrections are reported as notices.
        """
        frame = self.data[positions].fillna("")
        trimmed_rows = np.zeros(len(frame), dtype=bool)
        for position in positions:
            raw = frame[position]
            clean = raw.str.strip()
            changed = (clean != raw).to_numpy()
            if changed.any():
                trimmed_rows |= changed
                frame[position] = clean
        rows = self.rows
        if trimmed_rows.any():
            report.info("whitespace_trimmed",
                        f"Spaces around values were removed on {rows_phrase(rows[trimmed_rows])}.",
                        row=rows[trimmed_rows][0],
                        fix="Nothing to do; values are compared without surrounding spaces.")
        empty = (frame == "").all(axis=1).to_numpy()
        if empty.any():
            report.info("empty_rows_skipped",
                        f"Empty rows were skipped ({rows_phrase(rows[empty])}).",
                        row=rows[empty][0])
            frame = frame[~empty].reset_index(drop=True)
            rows = rows[~empty]
        return frame, rows


def read_table(data: bytes, filename: str, report: Report, one_column: bool = False) -> Table:
    """Decode and split an uploaded file, reporting every choice made; raise on unreadable input
    (also on a single column, unless ``one_column``: e.g. a list of zones)."""
    text, encoding = decode(data, report)
    # Normalise line endings so that row numbers match what an editor shows (\r\n and old-Mac \r).
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    stripped = text.lstrip("\n")
    lines_before_header = len(text) - len(stripped)
    delimiter, rest = _separator_line(stripped, lines_before_header + 1, report)
    if delimiter is not None:
        stripped = rest.lstrip("\n")
        lines_before_header += 1 + len(rest) - len(stripped)
    if not stripped.strip():
        report.fail("empty_file", "The file is empty (it contains no header and no data).",
                    fix="Choose the right file, or export the data again: the first line should "
                        "name the columns, e.g. “origin,destination,count”.")
    delimiter, header_fields = _sniff(stripped, delimiter, lines_before_header, report)
    header_row = 1 + lines_before_header
    if header_fields > MAX_COLUMNS:
        report.fail("too_many_columns",
                    f"The header has {header_fields:,} columns "
                    f"({DELIMITERS[delimiter]}-separated); at most {MAX_COLUMNS:,} are accepted.",
                    row=header_row,
                    fix="Keep only the columns the import needs (e.g. origin, destination, "
                        "count). A matrix with more destinations than that: upload it in the "
                        "long format, one row per origin–destination pair.")
    _check_memory(stripped, header_fields, header_row, report)
    try:
        cells = pd.read_csv(io.StringIO(stripped), sep=delimiter, header=None, dtype=str,
                            keep_default_na=False, na_filter=False, skip_blank_lines=False,
                            engine="c", quotechar='"')
    except pd.errors.ParserError as err:
        _fail_parser_error(err, delimiter, lines_before_header, report)
    raw_header = [str(h).strip() for h in cells.iloc[0].tolist()]
    header = [name or f"column {i + 1}" for i, name in enumerate(raw_header)]
    unnamed = [i for i, name in enumerate(raw_header) if not name]
    if len(header) < 2 and not one_column:
        report.fail("one_column",
                    f"Only one column was found (header “{header[0][:60]}”), so origins, "
                    f"destinations and counts cannot be told apart.",
                    row=header_row,
                    fix="Separate the columns with commas, semicolons or tabs, e.g. "
                        "“origin,destination,count”.")
    data_cells = cells.iloc[1:].reset_index(drop=True)
    rows = header_row + np.arange(1, len(cells), dtype=np.int64)
    if '"' in stripped:  # only quoted values can span lines and shift the row numbers
        extra = _extra_lines(cells)
        rows += np.cumsum(extra)[:-1]
    if len(data_cells) == 0 or (data_cells == "").all(axis=None):
        report.fail("no_data_rows", "The file has a header but no data rows.",
                    row=header_row,
                    fix="Export the data again including its rows, or choose the right file.")
    report.info("file_read",
                f"Read {len(data_cells):,} data rows and {len(header)} columns "
                f"({DELIMITERS[delimiter]}-separated, {encoding}).")
    return Table(filename, header, unnamed, data_cells, rows, delimiter, encoding)


def parse_memory(text_chars: int, lines: int, columns: int) -> int:
    """Bytes an import of a table of ``lines`` lines and ``columns`` columns (``text_chars``
    characters) holds at its peak, from the figures above (an upper bound on the files measured)."""
    per_cell = PARSE_WIDE_CELL_BYTES if columns > WIDE_COLUMNS else PARSE_CELL_BYTES
    return PARSE_FIXED_BYTES + 2 * text_chars + lines * columns * per_cell


def _check_memory(text: str, columns: int, header_row: int, report: Report) -> None:
    """Refuse, before parsing, a table whose import would exceed the memory budget: the cost is
    known from the header and the number of lines (one pass over the text, no parsing)."""
    lines = text.count("\n") + (not text.endswith("\n"))
    need = parse_memory(len(text), lines, columns)
    if need <= report.memory_budget:
        return
    report.fail("too_much_memory",
                f"Importing this file would take about {need / 2 ** 30:.1f} GB of memory "
                f"({lines:,} lines × {columns:,} columns); one import may use at most "
                f"{report.memory_budget / 2 ** 30:.2f} GB, so that the server stays up for "
                "everyone. Nothing was read.", row=header_row,
                fix="Keep only the zones you need or roll the data up to a coarser level; a "
                    "matrix with many empty cells is smaller in the long format (one row per "
                    "commute with a count, zero cells left out).")


def _separator_line(text: str, row: int, report: Report) -> tuple[str | None, str]:
    """Excel's optional first line "sep=;": the delimiter it names and the text after it."""
    first, _, rest = text.partition("\n")
    declared = _SEPARATOR_LINE.fullmatch(first.strip(" "))  # not a tab: it may be the separator
    if declared is None:
        return None, text
    delimiter = declared.group(1)
    if delimiter not in DELIMITERS:
        report.fail("unsupported_separator",
                    f"The first line “{first.strip()[:20]}” (written by Excel) says the values "
                    f"are separated by “{delimiter}”, which is not one of the accepted "
                    f"separators.", row=row,
                    fix="Save the file again as CSV with commas, semicolons or tabs.")
    report.info("separator_line_skipped",
                f"The first line “{first.strip(' ')}” only names the separator (Excel writes it); "
                f"it was skipped, and the file read as {DELIMITERS[delimiter]}-separated.",
                row=row)
    return delimiter, rest


def decode(data: bytes, report: Report) -> tuple[str, str]:
    """Bytes to text: size limit, gzip, binary formats, BOM, UTF-8 / UTF-16 / Latin-1.

    Whatever the encoding, text with a zero byte or with many control characters is refused:
    it is binary data, not a CSV file.
    """
    check_size(len(data), report)
    if len(data) == 0:
        report.fail("empty_file", "The file is empty (0 bytes).",
                    fix="Choose the right file, or export the data again.")
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, report)
    for signature, (what, fix) in _BINARY_SIGNATURES.items():
        if data.startswith(signature):
            report.fail("not_text", f"This is {what}, not a text (CSV) file.", fix=fix)
    text, name = _decode_text(data, report)
    _check_text(text, report)
    return text, name


def check_size(n_bytes: int, report: Report) -> None:
    """Refuse a file of ``n_bytes`` over the limit, stating its real size: a caller that reads
    only the first ``MAX_UPLOAD_BYTES + 1`` bytes of a file passes the file's own size (a
    114 MB file was reported as "100.0 MB (104,857,601 bytes)")."""
    if n_bytes > MAX_UPLOAD_BYTES:
        report.fail("file_too_large",
                    f"The file is {_size(n_bytes)}; the limit is {_size(MAX_UPLOAD_BYTES)}.",
                    fix="Compress it with gzip (.csv.gz files are accepted), roll it up to a "
                        "coarser level (e.g. LODES tracts or counties), or keep only the zones "
                        "you need.")


def _size(n_bytes: int) -> str:
    """"100.0 MB (104,857,601 bytes)": exact bytes, so a file just over the limit differs."""
    megabytes = n_bytes / 2**20
    return f"{megabytes:,.{0 if megabytes.is_integer() else 1}f} MB ({n_bytes:,} bytes)"


def _decode_text(data: bytes, report: Report) -> tuple[str, str]:
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") or _looks_like_utf32(data):
        report.fail("unsupported_encoding",
                    "The file is UTF-32 text (4 bytes per character), which is not supported.",
                    fix="Open it in a spreadsheet or editor and save it as “CSV UTF-8”.")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        report.info("encoding_utf16", "The file is UTF-16 text (as Excel's “Unicode text” "
                    "saves it); it was converted.")
        return _decode_or_fail(data, "utf-16", report), "UTF-16"
    if data.startswith(b"\xef\xbb\xbf"):
        report.info("bom_stripped", "The file starts with a UTF-8 byte-order mark (as Excel "
                    "writes it); it was removed.", row=1)
        return _decode_or_fail(data[3:], "utf-8", report), "UTF-8 with BOM"
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError as err:
        bad_row = data[:err.start].count(b"\n") + 1
    # Windows-1252 is what spreadsheets write as "Latin-1"; it agrees with ISO-8859-1 on letters.
    try:
        text, name = data.decode("cp1252"), "Latin-1 (Windows-1252)"
    except UnicodeDecodeError:
        text, name = data.decode("latin-1"), "Latin-1 (ISO-8859-1)"
    line = text.split("\n", bad_row)[bad_row - 1] if bad_row else ""
    sample = next((word for word in re.split(r"[\s,;\t|\"]+", line)
                   if any(ord(ch) > 127 for ch in word)), "")
    report.info("encoding_latin1",
                f"The file is not UTF-8; it was read as {name}"
                + (f" (row {bad_row} reads “{sample[:40]}”)." if sample else "."),
                row=bad_row,
                fix="Nothing to do if names with accents look right; if they look garbled, save "
                    "the file as “CSV UTF-8” and upload it again.")
    return text, name


def _looks_like_utf32(data: bytes) -> bool:
    """UTF-32 without a byte-order mark: three zero bytes in every four (ASCII text)."""
    sample = data[:4096]
    sample = sample[:len(sample) - len(sample) % 4]
    if len(sample) < 16:
        return False
    lanes = [sample[i::4] for i in range(4)]
    zero = [lane.count(0) == len(lane) for lane in lanes]
    return zero[1:] == [True] * 3 and not zero[0] or zero[:3] == [True] * 3 and not zero[3]


def _check_text(text: str, report: Report) -> None:
    """Refuse binary data: a zero byte anywhere, or control characters among the first ones."""
    nul = text.find("\x00")
    if nul >= 0:
        report.fail("not_text",
                    f"The file contains binary data (a zero byte on row "
                    f"{text.count(chr(10), 0, nul) + 1:,}), so it is not a CSV text file.",
                    row=text.count("\n", 0, nul) + 1,
                    fix="Export the table as CSV (UTF-8) and upload that file; UTF-16 text "
                        "needs its byte-order mark.")
    sample = text[:65536]
    controls = len(_CONTROL.findall(sample))
    if controls >= 4 and controls > 0.02 * len(sample):
        report.fail("not_text",
                    f"This does not look like a text (CSV) file: {controls:,} of its first "
                    f"{len(sample):,} characters are control codes, as in binary data.",
                    fix="Upload the table as a CSV text file (in a spreadsheet: “Save as → CSV "
                        "UTF-8”); a compressed file must be gzip (.csv.gz).")


def _decode_or_fail(data: bytes, encoding: str, report: Report) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        report.fail("bad_encoding", f"The file announces {encoding.upper()} but byte "
                    f"{err.start:,} is not valid {encoding.upper()}.",
                    fix="Open the file in a spreadsheet or editor and save it again as CSV UTF-8.")


def _gunzip(data: bytes, report: Report) -> bytes:
    """Decompress, stopping as soon as the text exceeds the upload limit (bounded memory)."""
    text = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            while chunk := stream.read(_GUNZIP_CHUNK):
                text.write(chunk)
                if text.tell() > MAX_UPLOAD_BYTES:
                    report.fail("file_too_large",
                                f"Decompressed, the file is larger than "
                                f"{_size(MAX_UPLOAD_BYTES)}, the limit for every upload "
                                f"(compressed, it is {_size(len(data))}).",
                                fix="Roll it up to a coarser level or keep only the zones you "
                                    "need.")
    except (OSError, EOFError, zlib.error) as err:
        report.fail("bad_gzip", f"The file looks gzip-compressed but cannot be decompressed "
                    f"({err}).", fix="Upload the uncompressed CSV, or compress it again.")
    text = text.getvalue()
    report.info("decompressed", f"The file was gzip-compressed; it was decompressed "
                f"({len(data) / 2**20:,.1f} MB → {len(text) / 2**20:,.1f} MB).")
    return text


def _sniff(text: str, declared: str | None, offset: int, report: Report) -> tuple[str, int]:
    """The delimiter that splits the header into the most fields, consistently with the next
    lines (``declared`` if given), and the header's number of fields.

    Only the first lines are examined, with quotes respected, in time linear in their length.
    Fails with ``line_too_long`` when no candidate can split the first lines because a value
    exceeds :data:`MAX_FIELD_CHARS`, naming its row (``offset``: lines above the header).
    """
    lines = _first_lines(text)
    candidates = [declared] if declared else list(DELIMITERS)
    fields = {}
    for delimiter in candidates:
        reader = csv.reader(lines, delimiter=delimiter)
        try:
            fields[delimiter] = _score(reader)
        except csv.Error:
            failed_at = reader.line_num
    if not fields:
        long_line = next((i for i, line in enumerate(lines) if len(line) > MAX_FIELD_CHARS),
                         failed_at - 1)
        report.fail("line_too_long",
                    f"Row {long_line + 1 + offset:,} has a value of more than "
                    f"{MAX_FIELD_CHARS:,} characters, far longer than any zone name or count.",
                    row=long_line + 1 + offset,
                    fix="Check that the file is a CSV table: a double quote that is never closed "
                        "joins the rest of the file into one value; otherwise split the row.")
    delimiter = max(fields, key=fields.get)  # the first of equally good ones
    return delimiter, fields[delimiter][2]


def _first_lines(text: str, count: int = 30) -> list[str]:
    """The first ``count`` lines, found without splitting the whole text."""
    lines, start = [], 0
    while len(lines) < count and start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        lines.append(text[start:end])
        start = end + 1
    return lines


def _score(reader) -> tuple[bool, int, int]:
    """How well a delimiter splits the first lines: (header has 2+ fields, lines agreeing with
    the header's field count, header fields). Blank lines are left out."""
    counts = [len(fields) for fields in reader if "".join(fields).strip()]
    header_fields = counts[0] if counts else 0
    consistent = sum(c == header_fields for c in counts[1:])
    return (header_fields > 1, consistent, header_fields)


def _extra_lines(cells: pd.DataFrame) -> np.ndarray:
    """Per row, how many line breaks its quoted values contain (each adds a line to the file)."""
    extra = np.zeros(len(cells), dtype=np.int64)
    for col in cells.columns:
        values = cells[col]
        if values.str.contains("\n", regex=False).any():
            extra += values.str.count("\n").fillna(0).to_numpy(dtype=np.int64)
    return extra


def _fail_parser_error(err: Exception, delimiter: str, offset: int, report: Report):
    """Turn pandas' tokenizer message into one the user can act on."""
    text = str(err)
    name = DELIMITERS[delimiter]
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text)
    if fields:
        expected, line, seen = map(int, fields.groups())
        report.fail("too_many_fields",
                    f"This row has {seen} values but the header has {expected} columns.",
                    row=line + offset,
                    fix=f"A value probably contains a {name}: put that value in double quotes, "
                        f"or remove the extra {name}.")
    quote = re.search(r"EOF inside string starting at row (\d+)", text)
    if quote:
        report.fail("unclosed_quote",
                    "A double quote (\") opens a value here that is never closed, so the rest of "
                    "the file would be read as one value.", row=int(quote.group(1)) + 1 + offset,
                    fix="Add the closing double quote, or remove the stray one.")
    report.fail("malformed_csv", f"The file could not be split into columns ({text.strip()}).",
                fix=f"Check that it is a {name}-separated text file with one header row.")


