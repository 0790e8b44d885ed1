"""MaxMind DB files for the geoip tests, written with PyPI's mmdb-writer
(pinned in tests/run, venv target/tools/mmdb):

    mmdb.py city|asn|unknown|views PATH

city, asn and unknown hold the records of CoreDNS's plugin/geoip/testdata
(its README's generator: 81.2.69.142/32 in Cambridge, GB; ASN 12345 "Test
ASN Organization", 10.0.0.0/8 "Not routed" with ASN 0), kept as data.
views maps 127.0.0.1/32 to NL (Amsterdam) and 127.0.0.2/32 to GB
(Cambridge), the two loopback clients of tests/geoip.rs.
"""

import sys

from mmdb_writer import MMDBWriter, MmdbF64, MmdbU16, MmdbU32
from netaddr import IPSet


def names(en, es=None):
    out = {"en": en}
    if es:
        out["es"] = es
    return out


def city(name, code, country, eu, lat, lon, tz, postal, subdivisions):
    return {
        "city": {"geoname_id": MmdbU32(2653941), "names": names(name)},
        "continent": {"code": "EU", "geoname_id": MmdbU32(6255148), "names": names("Europe", "Europa")},
        "country": {
            "iso_code": code,
            "geoname_id": MmdbU32(2635167),
            "names": names(country),
            "is_in_european_union": eu,
        },
        "location": {
            "accuracy_radius": MmdbU16(200),
            "latitude": MmdbF64(lat),
            "longitude": MmdbF64(lon),
            "time_zone": tz,
        },
        "postal": {"code": postal},
        "subdivisions": [{"iso_code": s, "names": names(s)} for s in subdivisions],
    }


CAMBRIDGE = city("Cambridge", "GB", "United Kingdom", True, 52.2242, 0.1315, "Europe/London", "CB4", ["ENG", "CAM"])
AMSTERDAM = city("Amsterdam", "NL", "Netherlands", True, 52.3759, 4.8975, "Europe/Amsterdam", "1012", ["NH"])


def write(path, kind, rows):
    w = MMDBWriter(ip_version=4, database_type=kind)
    for cidr, record in rows:
        w.insert_network(IPSet([cidr]), record)
    w.to_db_file(path)


def main(which, path):
    asn = {"autonomous_system_number": MmdbU32(12345), "autonomous_system_organization": "Test ASN Organization"}
    unrouted = {"autonomous_system_number": MmdbU32(0), "autonomous_system_organization": "Not routed"}
    tables = {
        "city": ("DBIP-City-Lite", [("81.2.69.142/32", CAMBRIDGE)]),
        "unknown": ("UnknownDbType", [("81.2.69.142/32", CAMBRIDGE)]),
        "asn": ("GeoLite2-ASN", [("81.2.69.142/32", asn), ("10.0.0.0/8", unrouted)]),
        "views": ("GeoLite2-City", [("127.0.0.1/32", AMSTERDAM), ("127.0.0.2/32", CAMBRIDGE)]),
    }
    kind, rows = tables[which]
    write(path, kind, rows)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
