"""screenshot.py: the HTML report in a real browser, for grade_test.py and
report_test.py.

shoot() renders a page with headless Chromium (Debian's `chromium`, which
tools/deps.sh installs) into a PNG; colours() decodes that PNG with the
standard library alone (zlib and the five PNG row filters) and returns
its pixels' colours with their counts, so a test can say that the page is
not blank and that the verdict cells' CSS backgrounds were painted.
Without chromium the test fails, unless AIRLOCK_NO_CHROMIUM=1 says to skip
the screenshot (printed, never silent).
"""
import os
import shutil
import struct
import subprocess
import zlib
from collections import Counter


def chromium():
    """chromium's path; None when AIRLOCK_NO_CHROMIUM=1; SystemExit when
    it is expected and missing."""
    if os.environ.get("AIRLOCK_NO_CHROMIUM") == "1":
        print("SKIP screenshot: AIRLOCK_NO_CHROMIUM=1")
        return None
    path = shutil.which("chromium")
    if not path:
        raise SystemExit("FAIL: chromium not found: tools/deps.sh installs "
                         "it (AIRLOCK_NO_CHROMIUM=1 skips the screenshot)")
    return path


def shoot(browser, html, png, size="1100,1400"):
    """Render file `html` into `png`; an error string or None."""
    if os.path.exists(png):
        os.unlink(png)
    p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--force-color-profile=srgb",
                        f"--screenshot={png}", f"--window-size={size}",
                        "file://" + os.path.abspath(html)],
                       capture_output=True, text=True, timeout=180)
    if not os.path.exists(png):
        return f"chromium exit {p.returncode}, no PNG: {p.stderr[-1500:]}"
    return None


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def colours(png):
    """(width, height, Counter of (r, g, b) pixels) of an 8-bit RGB or
    RGBA, non-interlaced PNG (what Chromium writes); ValueError else."""
    data = open(png, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    if not hdr:
        raise ValueError("no IHDR")
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type "
                         f"{ctype}, interlace {interlace}")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        raise ValueError("IDAT size does not match IHDR")
    prev = bytearray(stride)
    count = Counter()
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            line = bytearray((x + u) & 0xFF for x, u in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((a + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                c = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(a, prev[i], c)) & 0xFF
        elif f != 0:
            raise ValueError(f"bad filter {f} in row {y}")
        if bpp == 3:
            count.update(zip(line[0::3], line[1::3], line[2::3]))
        else:
            count.update(zip(line[0::4], line[1::4], line[2::4]))
        prev = line
    return w, h, count


def rgb(css):
    """'#c8f0c8' -> (200, 240, 200)"""
    return tuple(int(css[i:i + 2], 16) for i in (1, 3, 5))


def check(png, want_css, min_colours=8, min_share=0.001):
    """Failures (strings) of a report screenshot: it decodes, is not
    blank (at least min_colours colours, no colour over 99% of it), and
    each CSS colour in want_css covers at least min_share of it (a
    painted table cell, not a stray anti-aliased pixel)."""
    try:
        w, h, count = colours(png)
    except (OSError, ValueError, zlib.error) as e:
        return [f"screenshot {png}: {e}"]
    out, total = [], w * h
    top, n = count.most_common(1)[0]
    if len(count) < min_colours or n > 0.99 * total:
        out.append(f"screenshot {png} is blank: {len(count)} colours, "
                   f"{top} covers {100 * n / total:.1f}%")
    for css in want_css:
        if count.get(rgb(css), 0) < min_share * total:
            out.append(f"screenshot {png}: {css} covers "
                       f"{count.get(rgb(css), 0)} of {total} pixels")
    return out
