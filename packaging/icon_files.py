"""Windows .ico and macOS .icns containers around PNG images (standard library only).

Why not Qt's writers: Qt's ICO plugin writes one image, and its ICNS plugin one size, so Windows
Explorer would shrink a 256 px image to 16 px and Finder would lack the Retina sizes. Both
formats are simple containers that may hold PNG data directly (ICO since Windows Vista, ICNS
since OS X 10.7), so they are written here byte by byte, and read back by the packaging tests.
"""

from __future__ import annotations

import struct

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# ICNS element types that hold PNG data, by the pixel size of the image they contain.
# ic11..ic14 are the @2x (Retina) variants of 16, 32, 128 and 256 point icons.
ICNS_TYPES = (
    (b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256), (b"ic09", 512),
    (b"ic10", 1024), (b"ic11", 32), (b"ic12", 64), (b"ic13", 256), (b"ic14", 512),
)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    if data[:8] != PNG_SIGNATURE or data[12:16] != b"IHDR":
        raise ValueError("not a PNG image")
    return struct.unpack(">II", data[16:24])


def write_ico(pngs: dict[int, bytes]) -> bytes:
    """An .ico holding one PNG per size (sizes up to 256; 256 is written as 0, as the format wants)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        data = pngs[size]
        if png_size(data) != (size, size) or size > 256:
            raise ValueError(f"ICO image for {size} px must be a {size}x{size} PNG, at most 256 px")
        entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(data), offset + len(blobs))
        blobs += data
    return header + entries + blobs


def read_ico(data: bytes) -> dict[int, bytes]:
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    if (reserved, kind) != (0, 1):
        raise ValueError("not an ICO file")
    if 6 + 16 * count > len(data):
        raise ValueError("ICO directory is truncated")
    images = {}
    for i in range(count):
        w, _h, _c, _r, _planes, _bits, length, offset = struct.unpack("<BBBBHHII", data[6 + 16 * i: 22 + 16 * i])
        if offset + length > len(data):
            raise ValueError(f"ICO image {i} is truncated")
        images[w or 256] = data[offset: offset + length]
    return images


def write_icns(pngs: dict[int, bytes]) -> bytes:
    """An .icns with every PNG element type whose size is in ``pngs``."""
    body = b""
    for kind, size in ICNS_TYPES:
        if size in pngs:
            if png_size(pngs[size]) != (size, size):
                raise ValueError(f"ICNS image for {size} px must be a {size}x{size} PNG")
            body += kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size]
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def read_icns(data: bytes) -> dict[bytes, bytes]:
    if data[:4] != b"icns" or struct.unpack(">I", data[4:8])[0] != len(data):
        raise ValueError("not an ICNS file (or its length field is wrong)")
    elements, pos = {}, 8
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError(f"ICNS element header at byte {pos} is truncated")
        kind, length = data[pos: pos + 4], struct.unpack(">I", data[pos + 4: pos + 8])[0]
        if length < 8 or pos + length > len(data):
            raise ValueError(f"ICNS element {kind!r} at byte {pos} is truncated")
        elements[kind] = data[pos + 8: pos + length]
        pos += length
    return elements
