"""tshark's Kafka PDUs of a capture, one by one (its PDML: a packet may carry several PDUs, which
``-T fields`` would merge into one line)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

# tshark's notes that its dissection of a PDU's body is not to be trusted: a version its
# dissector does not know (it then reads the body as another version) or a body it misread.
DOUBTFUL = ("kafka.unsupported_api_version", "kafka.pdu_length_mismatch", "_ws.malformed")


@dataclass
class Pdu:
    frame: int
    client_port: int
    request: bool
    fields: dict[str, list[str]] = field(default_factory=dict)
    doubtful: bool = False  # tshark says its body fields are not to be trusted

    def first(self, name: str) -> str | None:
        values = self.fields.get(name)
        return values[0] if values else None


def tshark_pdus(path: Path, server_ports: set[int]) -> list[Pdu]:
    command = ["tshark", "-r", str(path), "-Y", "kafka", "-T", "pdml"]
    for port in sorted(server_ports):
        command += ["-d", f"tcp.port=={port},kafka"]
    out = subprocess.run(command, capture_output=True, check=True, timeout=300).stdout
    pdus: list[Pdu] = []
    for packet in ET.fromstring(out).iter("packet"):
        frame, ports, malformed = 0, (0, 0), False
        found: list[Pdu] = []
        for proto in packet.findall("proto"):
            name = proto.get("name")
            if name == "frame":
                frame = int(_show(proto, "frame.number"))
            elif name == "tcp":
                ports = (int(_show(proto, "tcp.srcport")), int(_show(proto, "tcp.dstport")))
            elif name == "_ws.malformed":
                malformed = True
            elif name == "kafka":
                request = ports[1] in server_ports
                pdu = Pdu(frame, ports[0] if request else ports[1], request)
                for item in proto.iter("field"):
                    key = item.get("name") or ""
                    if key.startswith("kafka.") or key.startswith("_ws."):
                        pdu.fields.setdefault(key, []).append(item.get("show", ""))
                    if key in DOUBTFUL or item.find(".//field[@name='_ws.malformed']") is not None:
                        pdu.doubtful = True
                found.append(pdu)
        for pdu in found:
            # tshark puts a malformed note beside the packet's PDUs, not inside the one it hit
            pdu.doubtful |= malformed
        pdus += found
    return pdus


def _show(proto: ET.Element, name: str) -> str:
    item = proto.find(f".//field[@name='{name}']")
    if item is None:
        raise ValueError(f"no {name} in a packet")
    return item.get("show", "")
