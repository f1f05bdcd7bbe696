//! PNG and JPEG images: brightness or selected colour channels, 8 or 16 bits per sample.

use std::path::Path;

use anyhow::{anyhow, bail};

use super::{Loaded, Samples};

/// Images: 8-bit images as u8, 16-bit ones as u16 (every bit kept; `Loaded::note` says so).
/// Without `channels`: the brightness, either computed here (the integer part of the colour
/// channels' mean) or, with `pixels`, left to the library: the colour channels as stored (gray, or
/// RGB interleaved; alpha dropped) with the image's shape in `Loaded::image`.
pub(super) fn load_image(path: &Path, bytes: &[u8], channels: Option<&[char]>, pixels: bool) -> anyhow::Result<Loaded> {
    use image::ColorType;
    // The format is sniffed from the content, so a mislabelled .jpg that is a PNG still loads.
    let img = image::load_from_memory(bytes).map_err(|e| {
        // Some decoder messages span lines; the CLI prints one.
        let e = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        anyhow!("{}: cannot decode image: {e}", path.display())
    })?;
    let wide = match img.color() {
        ColorType::L8 | ColorType::La8 | ColorType::Rgb8 | ColorType::Rgba8 => false,
        ColorType::L16 | ColorType::La16 | ColorType::Rgb16 | ColorType::Rgba16 => true,
        other => bail!("{}: {other:?} images are not supported (8- and 16-bit integer images are)", path.display()),
    };
    let note = wide.then(|| format!("{} is a 16-bit image: its samples are read as u16", path.display()));
    let brightness = |samples, image| Loaded {
        samples,
        interleave: 1,
        selected: vec![0],
        labels: vec!["brightness".into()],
        note: note.clone(),
        image,
    };
    if channels.is_none() && pixels {
        let colour = img.color().has_color();
        let samples = match (wide, colour) {
            (false, true) => Samples::U8(img.to_rgb8().into_raw()),
            (false, false) => Samples::U8(img.to_luma8().into_raw()),
            (true, true) => Samples::U16(img.to_rgb16().into_raw()),
            (true, false) => Samples::U16(img.to_luma16().into_raw()),
        };
        let image = tally::Image::hwc(img.height() as usize, img.width() as usize, if colour { 3 } else { 1 });
        return Ok(brightness(samples, Some(image)));
    }
    let Some(channels) = channels else {
        let samples = match (wide, img.color().has_color()) {
            (false, true) => Samples::U8(
                img.to_rgb8().pixels().map(|p| ((p[0] as u16 + p[1] as u16 + p[2] as u16) / 3) as u8).collect(),
            ),
            (false, false) => Samples::U8(img.to_luma8().into_raw()),
            (true, true) => Samples::U16(
                img.to_rgb16().pixels().map(|p| ((p[0] as u32 + p[1] as u32 + p[2] as u32) / 3) as u16).collect(),
            ),
            (true, false) => Samples::U16(img.to_luma16().into_raw()),
        };
        return Ok(brightness(samples, None));
    };

    if channels.is_empty() {
        bail!("--channels is empty; give some of r, g, b, a");
    }
    let mut selected = Vec::with_capacity(channels.len());
    let mut labels = Vec::with_capacity(channels.len());
    for &c in channels {
        let c = c.to_ascii_lowercase();
        let Some(index) = "rgba".find(c) else {
            bail!("unknown channel '{c}' (channels are r, g, b, a)");
        };
        if selected.contains(&(index as u32)) {
            bail!("channel '{c}' is given twice");
        }
        selected.push(index as u32);
        labels.push(c.to_string());
    }
    let samples = if wide { Samples::U16(img.to_rgba16().into_raw()) } else { Samples::U8(img.to_rgba8().into_raw()) };
    Ok(Loaded { samples, interleave: 4, selected, labels, note, image: None })
}

/// `--channels`: `r,g,b`, or letters run together (`rgb`).
pub fn parse_channels(items: &[String]) -> anyhow::Result<Vec<char>> {
    let mut out = Vec::new();
    for item in items {
        let item = item.trim();
        if item.chars().count() > 1 && !item.chars().all(|c| "rgbaRGBA".contains(c)) {
            bail!("unknown channel '{item}' (channels are r, g, b, a: e.g. --channels r,g,b or rgb)");
        }
        out.extend(item.chars());
    }
    Ok(out)
}
