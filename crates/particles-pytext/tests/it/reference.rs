//! Python 3.11 over every code point (U+0000..U+10FFFF, surrogates aside) and
//! over seeded random strings, compared with this crate.
//!
//! The interpreter is `PARTICLES_PYTHON`, else `python3` on the `PATH`. Without
//! one, or with one whose Unicode is not 14.0.0, the test prints why and
//! passes, unless `PARTICLES_REQUIRE_REFERENCE=1`, which makes that a failure.

use std::{collections::HashMap, process::Command};

use particles_pytext::{
    casefold, decimal_value, float_repr, ignorecase_eq, is_alnum, is_decimal, is_line_boundary,
    is_printable, is_space, is_word, lower, lstrip, nfc, nfkc, python_float, python_repr, rstrip,
    splitlines, strip, upper,
};

/// Writes, one record a line, tab-separated, strings as dot-separated hex code
/// points: `version`; `ranges NAME` (where a predicate holds, `first-last`
/// pairs); `decimal CP VALUE`; `map NAME CP RESULT` (where the result is not
/// the character itself); `sigma CP PROBES` (the sigma `lower()` gives in four
/// contexts around the character, where that is not the usual `σςςσ`);
/// `ignorecase LITERAL CPS` (what an ASCII character matches under
/// `re.IGNORECASE`); `string INPUT CASEFOLD NFC NFKC SPLITLINES REPR FLOAT
/// LOWER UPPER STRIP LSTRIP RSTRIP`; `float BITS REPR`.
const SCRIPT: &str = r#"
import random, re, struct, sys, unicodedata

out = sys.stdout
out.write(f"version\t{unicodedata.unidata_version}\n")
if unicodedata.unidata_version != "14.0.0":
    sys.exit(0)

def enc(text):
    return ".".join(f"{ord(c):x}" for c in text)

def ranges(predicate):
    found, start = [], None
    for cp in range(0x110001):
        holds = cp <= 0x10FFFF and not 0xD800 <= cp < 0xE000 and predicate(chr(cp))
        if holds and start is None:
            start = cp
        elif not holds and start is not None:
            found.append(f"{start:x}-{cp - 1:x}")
            start = None
    return " ".join(found)

predicates = [
    ("isspace", str.isspace), ("isprintable", str.isprintable), ("isalnum", str.isalnum),
    ("isdecimal", str.isdecimal), ("linebreak", lambda c: c.splitlines() == [""]),
    ("isword", lambda c: re.fullmatch(r"\w", c) is not None),
]
for name, predicate in predicates:
    out.write(f"ranges\t{name}\t{ranges(predicate)}\n")

scalars = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
for cp in scalars:
    c = chr(cp)
    value = unicodedata.decimal(c, None)
    if value is not None:
        out.write(f"decimal\t{cp:x}\t{value}\n")
    for name, result in (("casefold", c.casefold()),
                         ("nfc", unicodedata.normalize("NFC", c)),
                         ("nfkc", unicodedata.normalize("NFKC", c)),
                         ("lower", c.lower()), ("upper", c.upper())):
        if result != c:
            out.write(f"map\t{name}\t{cp:x}\t{enc(result)}\n")
    # The final-sigma context: the character before a sigma, after one that
    # follows a cased letter, between one and a cased letter, and between a
    # cased letter and a sigma.
    probes = "".join("f" if text.lower()[at] == "\u03c2" else "m" for text, at in (
        (c + "\u03a3", -1), ("A\u03a3" + c, 1), ("A\u03a3" + c + "A", 1),
        ("A" + c + "\u03a3", -1)))
    if probes != "mffm":
        out.write(f"sigma\t{cp:x}\t{probes}\n")

everything = "".join(chr(cp) for cp in scalars)
for code in range(0x20, 0x7F):
    found = re.finditer(re.escape(chr(code)), everything, re.IGNORECASE)
    out.write(f"ignorecase\t{code:x}\t{enc(''.join(m.group() for m in found))}\n")

rng = random.Random(20240614)

def span(first, last):
    return [chr(cp) for cp in range(first, last + 1)]

pools = {
    "ascii": [chr(cp) for cp in range(0x20, 0x7F)] + list("\t\n\r"),
    "marks": span(0x300, 0x36F) + span(0x591, 0x5BD) + span(0x1AB0, 0x1ABE)
        + span(0x1DC0, 0x1DFF) + span(0x20D0, 0x20F0) + span(0x1D165, 0x1D169)
        + span(0x1D16D, 0x1D172) + [chr(cp) for cp in (0x0F71, 0x0F72, 0x0F74, 0x0F80,
        0x0B3E, 0x0B56, 0x0B57, 0x0CD5, 0x0CD6, 0x0BBE, 0x0BD7, 0x0D3E, 0x0D57, 0x102E,
        0x3099, 0x309A, 0x0345, 0x0334, 0x05B0, 0x0E38, 0x0E48, 0x093C, 0x09BC, 0x1B35)],
    "bases": list("AaEeIiOoUuCcNnSsZzYyRrGgKkLlHhWwXxΑαΕεΗηΙιΟοΥυΩωАаЕеИиОоУуЗзЖжӘә")
        + [chr(cp) for cp in (0x0B47, 0x0B92, 0x0BC6, 0x0BC7, 0x0CBF, 0x0CC6, 0x0D46,
        0x0D47, 0x1025, 0x304B, 0x30CF, 0x1B05, 0x05D0, 0x0627, 0x0928, 0x09C7, 0x00C5,
        0x00D8, 0x017F, 0x01B7, 0x0292, 0x1E36, 0x1FBF, 0x2190, 0x2203, 0x0226, 0x00E6)],
    "hangul": span(0x1100, 0x1114) + span(0x115F, 0x1176) + span(0x11A6, 0x11C4)
        + [chr(rng.randrange(0xAC00, 0xD7A4)) for _ in range(64)]
        + span(0xFFA0, 0xFFDC) + span(0x3131, 0x318E) + span(0xD7B0, 0xD7C6),
    "compat": span(0xFB00, 0xFB06) + span(0xFB13, 0xFB17) + span(0x2460, 0x24FF)
        + span(0xFF01, 0xFF5E) + span(0xFF61, 0xFF9F) + span(0x3300, 0x3357)
        + span(0x2150, 0x218B) + span(0x2070, 0x209C) + span(0x1D400, 0x1D4FF)
        + span(0x1F100, 0x1F12F) + span(0x2000, 0x200F) + span(0x2100, 0x214F)
        + span(0xFE30, 0xFE6B) + span(0x0F73, 0x0F81) + span(0x3200, 0x32FF)
        + [chr(cp) for cp in (0xA0, 0xA8, 0xAA, 0xAF, 0xB2, 0xB4, 0xB5, 0xB8, 0xBC, 0xBD,
        0x132, 0x149, 0x17F, 0x1C4, 0x1C6, 0x1F1, 0x2B0, 0x2DD, 0x37A, 0x385, 0x3D2,
        0x3D3, 0x3D4, 0x1E9B, 0x1FC1, 0x1FED, 0x1FFD, 0x2044, 0x2126, 0x212A, 0x212B,
        0x2329, 0x232A, 0x2ADC, 0xF900, 0xFA10, 0xFDFA, 0xFDFB, 0xFE19, 0x2F800, 0x3000,
        0x0344, 0x0343, 0x0340, 0x0341, 0x0958, 0x09DC, 0x1F71, 0x1FEE, 0x2ADC, 0xFB1D)],
    "case": list("ßẞİıΐΰςΣσϐϑϕϖϰϱϵẛŉǰẖẗẘẙẚﬀﬁﬂﬃﬄﬅﬆΩKÅµſǅǈǋǲͅ") + [chr(cp) for cp in (
        0xA7CC, 0xA7CD, 0xA7C0, 0xA7C1, 0xA7C7, 0xA7C8, 0xA7C9, 0xA7CA, 0xA7D0, 0xA7D1,
        0xA7D6, 0xA7D9, 0xA7DA, 0xA7DB, 0xA7DC, 0xA7F5, 0xA7F6, 0x1C89, 0x1C8A,
        0x10D50, 0x10D70, 0x1E030, 0x16E40, 0x16E60, 0x1E900, 0x1E922, 0x10400, 0x10428,
        0x104B0, 0x10570, 0x10597, 0x1F88, 0x1F80, 0x1FB3, 0x1FBC, 0x1FF3, 0x1FFC, 0x1E9E)]
        + span(0x13A0, 0x13A8) + span(0x13F0, 0x13FD) + span(0xAB70, 0xAB78)
        + span(0x10A0, 0x10A5) + span(0x2C00, 0x2C03) + span(0x24B6, 0x24BA),
    "lines": list("\n\r\v\f\x1c\x1d\x1e\x1f\x85\u2028\u2029") + ["\r\n"],
    # Sigmas among cased letters, case-ignorable characters (apostrophes,
    # combining and modifier marks, the soft hyphen, the Greek ypogegrammeni,
    # which is both) and neither.
    "sigma": list("\u03a3\u03a3\u03a3\u03a3\u03c3\u03c2AaΑαΟοΔδΛ"
                  "'.:^`\u00ad\u0301\u0345\u02b0\u2019\u00b7\u3005\u1d2c"
                  " -1_\u00aa\u2160\u24b6") + ["\u03a3 ", "\u03a3'", "\u03a3\u0301"],
    "spaces": list(" \t\xa0\u1680\u2000\u2007\u200a\u200b\u202f\u205f\u3000\u180e\ufeff"),
    "unprintable": [chr(cp) for cp in (0x0, 0x7, 0x1B, 0x7F, 0x80, 0x9F, 0xAD, 0x378,
        0x61C, 0x200E, 0x2066, 0xE000, 0xF8FF, 0xFFFE, 0xFFFF, 0xE0001, 0x10FFFF,
        0x31350, 0x323AF, 0x2B739, 0x1FAF0, 0x11F00)] + ["'", '"', "\\"],
    "digits": [chr(zero + d) for zero in (0x30, 0x660, 0x6F0, 0x966, 0xFF10, 0x1D7CE,
        0x1E950, 0x11F50, 0x104A0, 0x1FBF0) for d in range(10)]
        + list("²³¹¼⅕①") + ["\u16ee", "\u0f33", "\u2189"],
}
names = sorted(pools)

def anything():
    while True:
        cp = rng.randrange(0x110000)
        if not 0xD800 <= cp < 0xE000:
            return chr(cp)

def text_string():
    weights = {name: rng.random() for name in names}
    chosen = [name for name in names if weights[name] > 0.5] or [rng.choice(names)]
    parts = []
    for _ in range(rng.randrange(0, 14)):
        if rng.random() < 0.05:
            parts.append(anything())
        else:
            parts.append(rng.choice(pools[rng.choice(chosen)]))
    return "".join(parts)

float_pieces = pools["digits"] * 2 + list("..eE+-__  ") + [
    "inf", "INF", "Infinity", "nan", "NaN", "-nan", "\u3000", "\x85", "\x1c", "\xa0",
    "\u2028", "\t", "0x", "1_0", ",", "\u0301", "\u200b"]

def float_string():
    if rng.random() < 0.4:
        value = rng.choice([rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randrange(-30, 30),
                            float(rng.randrange(-10**6, 10**6))])
        text = rng.choice([repr(value), f"{value:.3f}", f"{value:e}", str(int(value))])
        digits = rng.choice(pools["digits"][:100:10])
        text = "".join(chr(ord(digits) + int(c)) if c.isdigit() and rng.random() < 0.3 else c
                       for c in text)
        if rng.random() < 0.3:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(float_pieces) + text[at:]
        return text
    return "".join(rng.choice(float_pieces) for _ in range(rng.randrange(0, 8)))

def py_float(text):
    try:
        return struct.pack(">d", float(text)).hex()
    except ValueError:
        return "err"

sigma_words = ["\u03a3", "\u039f\u0394\u039f\u03a3", "\u03a3\u0391\u03a3 \u03a3\u0391\u03a3",
               "A\u03a3'", "A\u03a3'B", "A\u03a3\u0301", "\u03a3\u0301A", "a\u0345\u03a3",
               "'\u03a3", "\u03a3\u03a3", "\u03a3\u03a3\u03a3 ", "\u1d2c\u03a3", "\u03a3\u1d2c",
               "1\u03a3", "\u03a3.", "A.\u03a3.", "A\u00ad\u03a3\u00adB", "\u2160\u03a3",
               "\u24b6\u03a3", "\u00aa\u03a3 \u03a3\u00aa"]
strings = ([text_string() for _ in range(4000)] + [float_string() for _ in range(2000)]
           + sigma_words)
for text in strings:
    lines = text.splitlines()
    fields = [enc(text), enc(text.casefold()), enc(unicodedata.normalize("NFC", text)),
              enc(unicodedata.normalize("NFKC", text)),
              f"{len(lines)}:" + ",".join(enc(line) for line in lines), enc(repr(text)),
              py_float(text), enc(text.lower()), enc(text.upper()), enc(text.strip()),
              enc(text.lstrip()), enc(text.rstrip())]
    out.write("string\t" + "\t".join(fields) + "\n")

floats = [0.0, -0.0, 5e-324, 1.7976931348623157e308, 1e16, 1e15, 9999999999999998.0,
          1e-4, 1e-5, 0.0001234, 123456789012345680.0, 0.1, 1 / 3, 2.0 ** 53, 2.0 ** 63]
while len(floats) < 4000:
    kind = rng.randrange(4)
    if kind == 0:
        value = struct.unpack(">d", rng.getrandbits(64).to_bytes(8, "big"))[0]
    elif kind == 1:
        value = rng.randrange(1, 10 ** rng.randrange(1, 18)) / 10 ** rng.randrange(0, 22)
    elif kind == 2:
        value = rng.randrange(-10 ** 6, 10 ** 6) * 10.0 ** rng.randrange(-25, 25)
    else:
        # Few fraction bits at 15-17 digits: exact halves of the last digit,
        # where the shortest string has two candidates.
        value = rng.randrange(10 ** 14, 2 ** 55) / rng.choice([1, 2, 4, 8])
    if value == value:
        floats.append(value)
for value in floats:
    out.write(f"float\t{struct.pack('>d', value).hex()}\t{value!r}\n")
"#;

/// A one-character predicate of this crate.
type Predicate = fn(char) -> bool;
/// A string operation of this crate.
type Operation = fn(&str) -> String;
/// A trim of this crate.
type Strip = fn(&str) -> &str;

/// Up to 20 mismatches, kept for the failure message, and the total.
#[derive(Default)]
struct Mismatches {
    first: Vec<String>,
    count: usize,
}

impl Mismatches {
    fn check<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: &str,
        input: &str,
        ours: T,
        python: T,
    ) {
        if ours != python {
            self.count += 1;
            if self.first.len() < 20 {
                self.first.push(format!(
                    "{what}({input:?}): ours {ours:?}, python {python:?}"
                ));
            }
        }
    }
}

fn decode(field: &str) -> String {
    field
        .split('.')
        .filter(|hex| !hex.is_empty())
        .map(|hex| {
            let code = u32::from_str_radix(hex, 16).expect("hex code point");
            char::from_u32(code).expect("a scalar value")
        })
        .collect()
}

fn hex(field: &str) -> u32 {
    u32::from_str_radix(field, 16).expect("hex number")
}

/// Python's output, or why there is none.
fn python_output() -> Result<String, String> {
    let python = std::env::var("PARTICLES_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .output()
        .map_err(|error| format!("cannot run {python}: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "{python} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let stdout = String::from_utf8(output.stdout).map_err(|_| "output is not UTF-8".to_owned())?;
    let version = stdout
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("version\t"))
        .unwrap_or("unknown");
    if version != "14.0.0" {
        return Err(format!(
            "{python} has Unicode {version}, not Python 3.11's 14.0.0"
        ));
    }
    Ok(stdout)
}

/// This crate's predicates, by the names Python's ranges have.
const PREDICATES: [(&str, Predicate); 6] = [
    ("isspace", is_space),
    ("isprintable", is_printable),
    ("isalnum", is_alnum),
    ("isdecimal", is_decimal),
    ("linebreak", is_line_boundary),
    ("isword", is_word),
];

/// Python's records, read off its output.
#[derive(Default)]
struct Records<'o> {
    ranges: HashMap<&'o str, Vec<(u32, u32)>>,
    decimals: HashMap<u32, u8>,
    maps: HashMap<&'o str, HashMap<u32, String>>,
    sigmas: HashMap<u32, &'o str>,
    ignorecase: Vec<(char, String)>,
    strings: Vec<Vec<&'o str>>,
    floats: Vec<(u64, &'o str)>,
}

impl<'o> Records<'o> {
    fn parse(output: &'o str) -> Records<'o> {
        let mut records = Records::default();
        for line in output.lines() {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields[..] {
                ["version", _] => {}
                ["ranges", name, list] => {
                    let list = list.split(' ').filter(|pair| !pair.is_empty()).map(|pair| {
                        let (first, last) = pair.split_once('-').expect("first-last");
                        (hex(first), hex(last))
                    });
                    records.ranges.insert(name, list.collect());
                }
                ["decimal", code, value] => {
                    records
                        .decimals
                        .insert(hex(code), value.parse().expect("a digit"));
                }
                ["map", name, code, result] => {
                    records
                        .maps
                        .entry(name)
                        .or_default()
                        .insert(hex(code), decode(result));
                }
                ["sigma", code, probes] => {
                    records.sigmas.insert(hex(code), probes);
                }
                ["ignorecase", code, matched] => {
                    let literal = char::from_u32(hex(code)).expect("ASCII");
                    records.ignorecase.push((literal, decode(matched)));
                }
                ["string", ..] => records.strings.push(fields),
                ["float", bits, repr] => records
                    .floats
                    .push((u64::from_str_radix(bits, 16).expect("bits"), repr)),
                _ => panic!("unexpected line from python: {line:?}"),
            }
        }
        records
    }
}

/// Every code point through the predicates, `decimal`, the one-character
/// mappings and the final-sigma probes; returns how many there are.
fn check_code_points(records: &Records<'_>, mismatches: &mut Mismatches) -> usize {
    let mut code_points = 0;
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        code_points += 1;
        let code = c as u32;
        let input = c.to_string();
        for (name, predicate) in PREDICATES {
            let list = &records.ranges[name];
            let at = list.partition_point(|&(_, last)| last < code);
            let holds = list.get(at).is_some_and(|&(first, _)| first <= code);
            mismatches.check(name, &input, predicate(c), holds);
        }
        mismatches.check(
            "decimal",
            &input,
            decimal_value(c),
            records.decimals.get(&code).copied(),
        );
        let operations: [(&str, Operation); 5] = [
            ("casefold", casefold),
            ("nfc", nfc),
            ("nfkc", nfkc),
            ("lower", lower),
            ("upper", upper),
        ];
        for (name, operation) in operations {
            let python = records
                .maps
                .get(name)
                .and_then(|map| map.get(&code))
                .unwrap_or(&input);
            mismatches.check(name, &input, operation(&input), python.clone());
        }
        let python = records.sigmas.get(&code).copied().unwrap_or("mffm");
        mismatches.check("sigma", &input, sigma_probes(c).as_str(), python);
    }
    code_points
}

/// The sigma `lower()` gives in four contexts around `c`: `f` for final, `m`
/// for medial.
fn sigma_probes(c: char) -> String {
    [
        (format!("{c}\u{3A3}"), true),
        (format!("A\u{3A3}{c}"), false),
        (format!("A\u{3A3}{c}A"), false),
        (format!("A{c}\u{3A3}"), true),
    ]
    .iter()
    .map(|(text, sigma_last)| {
        let lowered = lower(text);
        let sigma = if *sigma_last {
            lowered.chars().next_back()
        } else {
            lowered.chars().nth(1)
        };
        if sigma == Some('\u{3C2}') {
            'f'
        } else {
            'm'
        }
    })
    .collect()
}

/// The random strings through every string operation.
fn check_strings(strings: &[Vec<&str>], mismatches: &mut Mismatches) {
    for fields in strings {
        let input = decode(fields[1]);
        mismatches.check("casefold", &input, casefold(&input), decode(fields[2]));
        mismatches.check("nfc", &input, nfc(&input), decode(fields[3]));
        mismatches.check("nfkc", &input, nfkc(&input), decode(fields[4]));
        let (count, lines) = fields[5].split_once(':').expect("count:lines");
        let python_lines: Vec<String> = match count {
            "0" => Vec::new(),
            _ => lines.split(',').map(decode).collect(),
        };
        let ours: Vec<String> = splitlines(&input).into_iter().map(str::to_owned).collect();
        mismatches.check("splitlines", &input, ours, python_lines);
        mismatches.check("repr", &input, python_repr(&input), decode(fields[6]));
        let python_bits =
            (fields[7] != "err").then(|| u64::from_str_radix(fields[7], 16).expect("bits"));
        mismatches.check(
            "float",
            &input,
            python_float(&input).map(f64::to_bits),
            python_bits,
        );
        mismatches.check("lower", &input, lower(&input), decode(fields[8]));
        mismatches.check("upper", &input, upper(&input), decode(fields[9]));
        let strips: [(&str, Strip); 3] = [("strip", strip), ("lstrip", lstrip), ("rstrip", rstrip)];
        for ((name, operation), python) in strips.into_iter().zip(&fields[10..]) {
            mismatches.check(name, &input, operation(&input), decode(python).as_str());
        }
    }
}

#[test]
fn every_operation_against_python() {
    let output = match python_output() {
        Ok(output) => output,
        Err(reason) => {
            assert!(
                std::env::var("PARTICLES_REQUIRE_REFERENCE").as_deref() != Ok("1"),
                "PARTICLES_REQUIRE_REFERENCE=1 but {reason}"
            );
            println!("skipped: {reason}");
            return;
        }
    };

    let records = Records::parse(&output);
    assert_eq!(records.ranges.len(), 6, "every predicate's ranges");
    assert_eq!(
        records.ignorecase.len(),
        0x7F - 0x20,
        "every printable ASCII literal"
    );
    assert!(records.strings.len() >= 6000 && records.floats.len() >= 4000);

    let mut mismatches = Mismatches::default();
    let code_points = check_code_points(&records, &mut mismatches);

    for (literal, python) in &records.ignorecase {
        let ours: String = (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| ignorecase_eq(c, *literal))
            .collect();
        mismatches.check("ignorecase", &literal.to_string(), &ours, python);
    }

    check_strings(&records.strings, &mut mismatches);

    for &(bits, repr) in &records.floats {
        let value = f64::from_bits(bits);
        mismatches.check(
            "float_repr",
            &format!("{bits:016x}"),
            float_repr(value).as_str(),
            repr,
        );
    }

    println!(
        "compared {code_points} code points x {} operations, {} ASCII literals under \
         IGNORECASE, {} strings x 11 operations, {} float reprs: {} mismatches",
        PREDICATES.len() + 7,
        records.ignorecase.len(),
        records.strings.len(),
        records.floats.len(),
        mismatches.count
    );
    assert!(
        mismatches.count == 0,
        "{} mismatches with Python, the first {}:\n{}",
        mismatches.count,
        mismatches.first.len(),
        mismatches.first.join("\n")
    );
}
