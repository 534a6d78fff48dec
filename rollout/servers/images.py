"""MCP server: image operations on workspace files with Pillow.

Crop, resize, rotate, blur regions, draw rectangles, circles and text. Each operation reads an
image of the task workspace and writes a new one (``output_path``, default ``<name>_<op>.<ext>``
next to the input); coordinates are pixels, origin top-left, colors a name, ``#rrggbb`` or [r, g, b].
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from PIL import Image, ImageColor, ImageDraw, ImageFilter, ImageFont
from pydantic import BaseModel, Field

from rollout.servers._workspace import resolve

server = MCPServer("images", instructions="Image operations on files of the task workspace.",
                   log_level="WARNING")

_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
_write_lock = threading.Lock()

Color = Annotated[str | list[int], Field(description="A color: a name, '#rrggbb', or [r, g, b]")]
OutputPath = Annotated[str | None, Field(description="Where to write the result (default: "
                                                     "<input name>_<operation> next to the input)")]


class Area(BaseModel):
    """A rectangle, with an optional blur strength."""

    x1: int
    y1: int
    x2: int
    y2: int
    blur_strength: float | None = Field(None, description="Gaussian blur radius for this area")


class Rectangle(BaseModel):
    """A rectangle to draw, with an optional label above it."""

    x1: int
    y1: int
    x2: int
    y2: int
    color: Color = "red"
    thickness: int = Field(3, ge=1)
    filled: bool = False
    label: str | None = None


class Circle(BaseModel):
    """A circle to draw."""

    center_x: int
    center_y: int
    radius: int = Field(ge=1)
    color: Color = "red"
    thickness: int = Field(3, ge=1)
    filled: bool = False


class Text(BaseModel):
    """A text to draw at (x, y), its top-left corner."""

    text: str
    x: int
    y: int
    color: Color = "red"
    font_size: int = Field(20, ge=4, le=400)


def _color(value: str | list[int]) -> tuple[int, int, int]:
    try:
        if isinstance(value, str):
            return ImageColor.getrgb(value)[:3]
        if len(value) == 3 and all(0 <= int(v) <= 255 for v in value):
            return int(value[0]), int(value[1]), int(value[2])
    except (ValueError, TypeError):
        pass
    raise ToolError(f"not a color: {value!r}")


def _open(ctx: Context, input_path: str) -> tuple[Image.Image, Path, str]:
    full, rel = resolve(ctx, input_path, must_exist=True, suffixes=_SUFFIXES)
    try:
        with Image.open(full) as img:
            img.load()
            return img.copy(), full, rel
    except OSError as exc:
        raise ToolError(f"cannot read '{input_path}' as an image: {exc}") from None


def _save(ctx: Context, img: Image.Image, source: Path, op: str, output_path: str | None) -> dict[str, object]:
    default = source.with_name(f"{source.stem}_{op}{source.suffix}")
    full, rel = resolve(ctx, output_path or str(default), suffixes=_SUFFIXES)
    full.parent.mkdir(parents=True, exist_ok=True)
    if full.suffix.lower() in (".jpg", ".jpeg") and img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    with _write_lock:
        img.save(full)
    return {"output_path": rel, "width": img.width, "height": img.height}


def _box(img: Image.Image, x1: int, y1: int, x2: int, y2: int, what: str) -> tuple[int, int, int, int]:
    left, right = sorted((max(0, min(x1, img.width)), max(0, min(x2, img.width))))
    top, bottom = sorted((max(0, min(y1, img.height)), max(0, min(y2, img.height))))
    if right - left < 1 or bottom - top < 1:
        raise ToolError(f"{what} ({x1}, {y1}, {x2}, {y2}) is empty inside the {img.width}x{img.height} image")
    return left, top, right, bottom


@server.tool()
def image_info(input_path: str, ctx: Context) -> dict[str, object]:
    """Size, mode and format of an image file."""
    full, rel = resolve(ctx, input_path, must_exist=True, suffixes=_SUFFIXES)
    try:
        with Image.open(full) as img:
            return {"path": rel, "width": img.width, "height": img.height, "mode": img.mode,
                    "format": img.format}
    except OSError as exc:
        raise ToolError(f"cannot read '{input_path}' as an image: {exc}") from None


@server.tool()
def crop(input_path: str, x1: int, y1: int, x2: int, y2: int, ctx: Context,
         output_path: OutputPath = None) -> dict[str, object]:
    """Crop an image to the rectangle (x1, y1)-(x2, y2), clipped to the image."""
    img, source, _ = _open(ctx, input_path)
    return _save(ctx, img.crop(_box(img, x1, y1, x2, y2, "the crop box")), source, "crop", output_path)


@server.tool()
def resize(input_path: str, ctx: Context, width: int | None = None, height: int | None = None,
           output_path: OutputPath = None) -> dict[str, object]:
    """Resize an image; with only width or height given, the aspect ratio is kept."""
    img, source, _ = _open(ctx, input_path)
    if (width is not None and not 1 <= width <= 20000) or (height is not None and not 1 <= height <= 20000):
        raise ToolError("width and height must be between 1 and 20000")
    if width is None:
        if height is None:
            raise ToolError("give width, height or both")
        width = max(1, round(img.width * height / img.height))
    elif height is None:
        height = max(1, round(img.height * width / img.width))
    return _save(ctx, img.resize((width, height), Image.Resampling.LANCZOS), source, "resize", output_path)


@server.tool()
def rotate(input_path: str, angle: float, ctx: Context, expand: bool = True,
           output_path: OutputPath = None) -> dict[str, object]:
    """Rotate an image counter-clockwise by angle degrees (expand: grow the canvas to fit)."""
    img, source, _ = _open(ctx, input_path)
    return _save(ctx, img.rotate(angle, resample=Image.Resampling.BICUBIC, expand=expand), source, "rotate",
                 output_path)


@server.tool()
def blur(input_path: str, areas: list[Area], ctx: Context, blur_strength: float = 15.0,
         invert_areas: bool = False, output_path: OutputPath = None) -> dict[str, object]:
    """Gaussian-blur rectangular areas of an image (invert_areas: blur everything else instead)."""
    img, source, _ = _open(ctx, input_path)
    if not areas:
        raise ToolError("give at least one area")
    if invert_areas:
        out = img.filter(ImageFilter.GaussianBlur(blur_strength))
        for area in areas:
            box = _box(img, area.x1, area.y1, area.x2, area.y2, "the area")
            out.paste(img.crop(box), box[:2])
    else:
        out = img.copy()
        for area in areas:
            box = _box(img, area.x1, area.y1, area.x2, area.y2, "the area")
            radius = area.blur_strength if area.blur_strength is not None else blur_strength
            out.paste(img.crop(box).filter(ImageFilter.GaussianBlur(radius)), box[:2])
    return _save(ctx, out, source, "blur", output_path)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


@server.tool()
def draw_rectangles(input_path: str, rectangles: list[Rectangle], ctx: Context,
                    output_path: OutputPath = None) -> dict[str, object]:
    """Draw rectangles (bounding boxes), each with an optional label above it."""
    img, source, _ = _open(ctx, input_path)
    img = img.convert("RGB")
    draw = ImageDraw.Draw(img)
    for r in rectangles:
        color = _color(r.color)
        box = (min(r.x1, r.x2), min(r.y1, r.y2), max(r.x1, r.x2), max(r.y1, r.y2))
        draw.rectangle(box, outline=color, width=r.thickness, fill=color if r.filled else None)
        if r.label:
            size = max(12, r.thickness * 6)
            draw.text((box[0], max(0, box[1] - size - 4)), r.label, fill=color, font=_font(size))
    return _save(ctx, img, source, "boxes", output_path)


@server.tool()
def draw_circles(input_path: str, circles: list[Circle], ctx: Context,
                 output_path: OutputPath = None) -> dict[str, object]:
    """Draw circles given by center and radius."""
    img, source, _ = _open(ctx, input_path)
    img = img.convert("RGB")
    draw = ImageDraw.Draw(img)
    for c in circles:
        color = _color(c.color)
        box = (c.center_x - c.radius, c.center_y - c.radius, c.center_x + c.radius, c.center_y + c.radius)
        draw.ellipse(box, outline=color, width=c.thickness, fill=color if c.filled else None)
    return _save(ctx, img, source, "circles", output_path)


@server.tool()
def draw_texts(input_path: str, texts: list[Text], ctx: Context, output_path: OutputPath = None) -> dict[str, object]:
    """Draw text labels on an image."""
    img, source, _ = _open(ctx, input_path)
    img = img.convert("RGB")
    draw = ImageDraw.Draw(img)
    for t in texts:
        draw.text((t.x, t.y), t.text, fill=_color(t.color), font=_font(t.font_size))
    return _save(ctx, img, source, "texts", output_path)


if __name__ == "__main__":
    server.run()
