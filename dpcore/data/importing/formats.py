"""The accepted upload formats in words, with a small example of each (for the UI and docs/UPLOADING.md).

The examples are imported by the test suite, so what the help shows is known to work.
"""

from __future__ import annotations

from dpcore.data.importing.names import MAX_NAME_CHARS
from dpcore.data.importing.reading import MAX_COLUMNS, MAX_UPLOAD_BYTES
from dpcore.data.od import DENSE_CELL_LIMIT, MEMORY_BUDGET_BYTES

#: Format key → one-line description (the keys are what ``import_od(format=...)`` accepts).
FORMATS = {
    "auto": "Detect the format from the header",
    "long": "Long format: one row per origin–destination pair with a count",
    "powscar": "Irish CSO POWSCAR file (Census 2016 place of work, school or college)",
    "lodes": "US LEHD LODES origin–destination file (w_geocode, h_geocode, S000, …)",
    "matrix": "OD matrix: origins down the first column, destinations across the header",
    "persons": "One row per person: origin and destination, no count",
}

#: Levels each format can be imported at, finest first (``import_od(level=...)``).
LEVELS = {"powscar": ("ed", "county"), "lodes": ("block", "tract", "county")}

#: Small, valid example files, as text.
EXAMPLES = {
    "long": (
        "origin,destination,count\n"
        "Maynooth,Maynooth,4477\n"
        "Celbridge,Maynooth,718\n"
        "Celbridge,Dublin City,1520\n"),
    "long_coordinates": (
        "origin,destination,count,origin_lat,origin_lon,destination_lat,destination_lon\n"
        "Maynooth,Maynooth,4477,53.3815,-6.5910,53.3815,-6.5910\n"
        "Celbridge,Maynooth,718,53.3399,-6.5390,53.3815,-6.5910\n"
        "Celbridge,Dublin City,1520,53.3399,-6.5390,53.3498,-6.2603\n"),
    "powscar": (
        "RESIDENCE_ED_GUID,RESIDENCE_CSOED,RESIDENCE_CSOED_LABEL,RESIDENCE_COUNTY,"
        "RESIDENCE_COUNTY_LABEL,POWSC_ED_GUID,POWSC_CSOED,POWSC_CSOED_LABEL,POWSC_COUNTY,"
        "POWSC_COUNTY_LABEL,COUNT\n"
        "ED-0001,07001,Maynooth,KE,Kildare,ED-0001,07001,Maynooth,KE,Kildare,4477\n"
        "ED-0002,07002,Celbridge,KE,Kildare,ED-0001,07001,Maynooth,KE,Kildare,718\n"
        "ED-0003,02003,Drumcondra South C,DC,Dublin City,ED-0004,03004,Clonskeagh-Belfield,"
        "DR,Dún-Laoghaire Rathdown,28\n"
        "ED-0002,07002,Celbridge,KE,Kildare,,,Work/school from home,,Work/school from home,"
        "95\n"),
    "lodes": (
        "w_geocode,h_geocode,S000,SA01,SA02,SA03,SE01,SE02,SE03,SI01,SI02,SI03,createdate\n"
        "010010201001000,010010201001003,2,0,1,1,0,1,1,0,0,2,20230101\n"
        "010010201001000,010010202002010,1,1,0,0,1,0,0,0,0,1,20230101\n"
        "010030114021015,010010201001003,3,1,2,0,0,2,1,0,1,2,20230101\n"),
    "matrix": (
        "origin,Dublin City,Fingal,Cork City\n"
        "Dublin City,218860,20110,1200\n"
        "Fingal,61200,91170,300\n"
        "Cork City,900,150,30210\n"),
    "persons": (
        "origin,destination\n"
        "Maynooth,Maynooth\n"
        "Celbridge,Maynooth\n"
        "Celbridge,Maynooth\n"
        "Celbridge,Dublin City\n"),
    "zones": (
        "zone,lat,lon,parent\n"
        "Maynooth,53.3815,-6.5910,Kildare\n"
        "Celbridge,53.3399,-6.5390,Kildare\n"
        "Dublin City,53.3498,-6.2603,Dublin\n"),
}

_HELP = {
    "long": "Columns origin, destination, count; optionally origin_lat, origin_lon, "
            "destination_lat, destination_lon (WGS84 degrees) and origin_label, "
            "destination_label. Common variants are recognised in any capitalisation "
            "(from/to, home/work, O/D, flow, trips, n, lng, latitude…); otherwise you map the "
            "columns yourself. Rows repeating an origin–destination pair are added up (with a "
            "warning).",
    "long_coordinates": "The long format with each zone's position on its rows.",
    "powscar": "The CSO file as published (Latin-1 text, labels such as “Dún-Laoghaire "
               "Rathdown”). Import at county level or at electoral-division (ED) level, where "
               "each ED is nested in its county so the data can be rolled up exactly. "
               "Destinations that are not places (“Work/school from home”, “Overseas”, …) "
               "become destination-only zones without coordinates.",
    "lodes": "A LODES “od” file (plain or .gz). Home block = origin, work block = destination, "
             "S000 = count. Codes are read as text (leading zeros kept). Import at block, tract "
             "(11-digit prefix) or county (5-digit prefix) level; each level is nested in the "
             "next coarser one. By default the finest level that fits in memory is used.",
    "matrix": "The first column names the origins, the header row names the destinations, "
              "each cell is a count. Empty cells mean 0.",
    "persons": "One row per commuter; identical rows are counted.",
    "zones": "Optional second file: zone, lat, lon and optionally parent (e.g. the county) and "
             "label. It places zones on the map and, for formats without levels, nests zones "
             "in parents so the data can be rolled up.",
}

_TITLES = {"long": "Long format", "long_coordinates": "Long format with coordinates",
           "powscar": "CSO POWSCAR (Ireland)", "lodes": "LEHD LODES (United States)",
           "matrix": "OD matrix", "persons": "One row per person", "zones": "Zones file"}


def describe_formats() -> str:
    """Markdown describing every accepted format with its example, and the limits."""
    parts = [
        "Files are comma-, semicolon- or tab-separated text in UTF-8 (with or without BOM), "
        "UTF-16 or Latin-1; gzip-compressed files (.csv.gz) are accepted. "
        f"The size limit is {MAX_UPLOAD_BYTES // 2**20} MB per file (decompressed, for a "
        f"compressed one); a file may have at most {MAX_COLUMNS:,} columns, a zone name at "
        f"most {MAX_NAME_CHARS} characters, and the domain (origins × destinations) at most "
        f"{DENSE_CELL_LIMIT:,} cells. A file whose reading would take more than "
        f"{MEMORY_BUDGET_BYTES / 2**30:.2f} GB of memory (e.g. a matrix of more than about 7 "
        "million cells; the estimate comes from its header and line count) is refused before "
        "it is read. Messages number rows as a spreadsheet does: the header is row 1."]
    for key, example in EXAMPLES.items():
        parts.append(f"**{_TITLES[key]}.** {_HELP[key]}\n\n```csv\n{example}```")
    return "\n\n".join(parts)
