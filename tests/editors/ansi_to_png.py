"""Renders a terminal screen captured with `tmux capture-pane -p -e` to a PNG, with Pillow.

Usage: ansi_to_png.py SCREEN.ansi OUT.png

Understands the SGR escapes tmux writes: reset, bold, italic, underline, reverse, the 16 colours,
the 256-colour palette and 24-bit colour. Every character takes one cell (the capture has no
double-width characters), drawn with DejaVu Sans Mono.
"""

import re
import sys

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = "/usr/share/fonts/truetype/dejavu/"
FONT_SIZE = 15
PADDING = 12
DEFAULT_FG = (208, 208, 208)
DEFAULT_BG = (38, 38, 38)
# xterm's 16 colours.
BASE = [
    (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205), (229, 229, 229),
    (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255), (0, 255, 255), (255, 255, 255),
]


def palette(n):
    """The xterm 256-colour palette."""
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    level = 8 + (n - 232) * 10
    return (level, level, level)


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bg = None
        self.bold = False
        self.italic = False
        self.underline = False
        self.reverse = False

    def apply(self, params):
        codes = [int(p) if p else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code == 0:
                self.reset()
            elif code == 1:
                self.bold = True
            elif code == 3:
                self.italic = True
            elif code == 4:
                self.underline = True
            elif code == 7:
                self.reverse = True
            elif code == 22:
                self.bold = False
            elif code == 23:
                self.italic = False
            elif code == 24:
                self.underline = False
            elif code == 27:
                self.reverse = False
            elif 30 <= code <= 37:
                self.fg = BASE[code - 30]
            elif 90 <= code <= 97:
                self.fg = BASE[code - 90 + 8]
            elif 40 <= code <= 47:
                self.bg = BASE[code - 40]
            elif 100 <= code <= 107:
                self.bg = BASE[code - 100 + 8]
            elif code == 39:
                self.fg = None
            elif code == 49:
                self.bg = None
            elif code in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    colour = palette(codes[i + 2])
                    i += 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    colour = tuple(codes[i + 2 : i + 5])
                    i += 4
                else:
                    colour = None
                if code == 38:
                    self.fg = colour
                else:
                    self.bg = colour
            i += 1

    def colours(self):
        fg = self.fg or DEFAULT_FG
        bg = self.bg or DEFAULT_BG
        return (bg, fg) if self.reverse else (fg, bg)


ESCAPE = re.compile(r"\x1b\[([0-9;]*)m")


def cells(text):
    """Each line of the screen as a list of (character, fg, bg, bold, italic, underline)."""
    style = Style()
    screen = []
    for line in text.split("\n"):
        row = []
        at = 0
        for match in ESCAPE.finditer(line):
            for ch in line[at : match.start()]:
                fg, bg = style.colours()
                row.append((ch, fg, bg, style.bold, style.italic, style.underline))
            style.apply(match.group(1))
            at = match.end()
        for ch in line[at:]:
            fg, bg = style.colours()
            row.append((ch, fg, bg, style.bold, style.italic, style.underline))
        screen.append(row)
    while screen and not screen[-1]:
        screen.pop()
    return screen


def main(source, target):
    with open(source, encoding="utf-8") as f:
        screen = cells(f.read())
    fonts = {
        (False, False): ImageFont.truetype(FONT_DIR + "DejaVuSansMono.ttf", FONT_SIZE),
        (True, False): ImageFont.truetype(FONT_DIR + "DejaVuSansMono-Bold.ttf", FONT_SIZE),
        (False, True): ImageFont.truetype(FONT_DIR + "DejaVuSansMono-Oblique.ttf", FONT_SIZE),
        (True, True): ImageFont.truetype(FONT_DIR + "DejaVuSansMono-BoldOblique.ttf", FONT_SIZE),
    }
    regular = fonts[(False, False)]
    width = round(regular.getlength("M"))
    ascent, descent = regular.getmetrics()
    height = ascent + descent + 2
    columns = max(len(row) for row in screen)
    image = Image.new("RGB", (columns * width + 2 * PADDING, len(screen) * height + 2 * PADDING), DEFAULT_BG)
    draw = ImageDraw.Draw(image)
    for y, row in enumerate(screen):
        top = PADDING + y * height
        for x, (ch, fg, bg, bold, italic, underline) in enumerate(row):
            left = PADDING + x * width
            if bg != DEFAULT_BG:
                draw.rectangle([left, top, left + width - 1, top + height - 1], fill=bg)
            if ch != " ":
                draw.text((left, top + 1), ch, font=fonts[(bold, italic)], fill=fg)
            if underline:
                draw.line([left, top + height - 2, left + width - 1, top + height - 2], fill=fg)
    image.save(target, optimize=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
