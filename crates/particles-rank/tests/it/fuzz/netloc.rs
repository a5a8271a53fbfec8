//! `netloc` against Python 3.11's `urllib.parse.urlsplit(uri).netloc`: the same
//! verdict (Python raising `ValueError` where we return an error) and the same
//! text. URIs are built from parts (leading controls, schemes valid and not,
//! slashes, userinfo, hosts: names, IPv4, bracketed IPv6 and IPvFuture valid and
//! broken, characters NFKC turns into delimiters; ports, paths, queries,
//! fragments) and then edited (tabs and newlines anywhere, stray brackets).

use particles_rank::netloc;
use particles_testkit::fuzz::{
    self,
    grammar::{concat, mutated, pick},
};
use proptest::prelude::*;
use serde_json::Value;

fn ipv6() -> BoxedStrategy<String> {
    let group = || {
        prop_oneof![
            pick(&["0", "1", "ff", "FFFF", "0000", "12345", "g", "", "db8", "2001"]),
            "[0-9a-fA-F]{1,4}"
        ]
    };
    prop_oneof![
        3 => pick(&[
            "::1", "::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1::2::3",
            "fe80::1%eth0", "fe80::1%", "fe80::1%%", "fe80::1%a%b", "::ffff:1.2.3.4",
            "::ffff:01.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4",
            "1.2.3.4", "v1.x", "vF.abc", "v.x", "v1.", "V1.x", "vg.x", "v1.a:b", "v12.[", "",
            ":", ":::", "1:2:3:4:5:6:7:8:9", "::%25eth0", "fe80::1%\u{00E9}", "2001:db8::",
        ]),
        2 => proptest::collection::vec(group(), 1..9).prop_map(|groups| groups.join(":")),
        1 => (proptest::collection::vec(group(), 0..4), proptest::collection::vec(group(), 0..4))
            .prop_map(|(a, b)| format!("{}::{}", a.join(":"), b.join(":"))),
    ]
    .boxed()
}

fn host() -> BoxedStrategy<String> {
    prop_oneof![
        4 => pick(&[
            "example.com", "EXAMPLE.Com", "a", "", "en.wikipedia.org", "xn--bcher-kva.ch",
            "127.0.0.1", "b\u{00FC}cher.de", "ex\u{2100}mple.com", "ex\u{FF0F}ample",
            "a\u{FF20}b", "a\u{FE13}b", "\u{FF45}\u{FF58}.com", "a\u{2474}b", "a\u{FE56}b",
            "a\u{FF03}b", "a\u{FF1A}b", "\u{212A}elvin", "\u{00E9}", "a%2Fb", "a b", "\u{0130}",
        ]),
        3 => concat(vec![pick(&["[", "[", "", "a["]), ipv6(), pick(&["]", "]", "", "]a", "]]", "]:80", "]:", "]x:1"])]),
        2 => "[a-z0-9.\\-]{0,12}",
        1 => "\\PC{0,6}",
    ]
    .boxed()
}

fn uris() -> BoxedStrategy<String> {
    let uri = || {
        concat(vec![
            pick(&["", "", "", " ", "\t", "\0", "\u{001F}", "\u{00A0}", "  \n"]),
            pick(&[
                "https:",
                "http:",
                "HTTPS:",
                "ftp:",
                "file:",
                "mailto:",
                "a+b-c.d:",
                "1http:",
                "ht tp:",
                "ht_tp:",
                "",
                "",
                ":",
                "h:",
                "\u{00E9}:",
                "javascript:",
                "x\u{0130}:",
            ]),
            pick(&["//", "//", "//", "/", "///", "\\\\", "", "/\t/", "//\n"]),
            pick(&[
                "",
                "",
                "",
                "user@",
                "user:pass@",
                "u@v@",
                "@",
                ":@",
                "\u{00FC}@",
                "[::1]@",
            ]),
            host(),
            pick(&["", "", ":80", ":", ":abc", ":99999", ": 80", "::"]),
            pick(&[
                "",
                "/",
                "/path/x",
                "?q=1",
                "#frag",
                "/a?b#c",
                "?#",
                "#?/",
                ";p",
                "/\u{00E9}",
                "/[",
                "?[::1]",
            ]),
        ])
    };
    prop_oneof![
        6 => uri(),
        3 => mutated(uri(), &["\t", "\n", "\r", "[", "]", "@", ":", "/", "?", "#", " ", "\u{2100}", "\u{FF20}", "%"]),
        1 => "\\PC{0,16}",
    ]
    .boxed()
}

fn check(uri: &String, verdict: &Value) -> Result<(), String> {
    let ours = netloc(uri);
    match (verdict["ok"].as_bool(), &ours) {
        (Some(true), Ok(text)) if verdict["netloc"].as_str() == Some(text.as_str()) => Ok(()),
        (Some(false), Err(_)) => Ok(()),
        _ => Err(format!("{uri:?}: reference {verdict}, ours {ours:?}")),
    }
}

#[test]
fn differential() {
    fuzz::run(fuzz::Target {
        decoder: "netloc",
        strategy: uris(),
        corpus: [
            "https://en.wikipedia.org/wiki/X",
            " \thttps://a\nb.com?q",
            "http://u@[::1]:8/",
            "http://a[::1]/",
            "http://[::1]a/",
            "http://[fe80::1%]/",
            "http://ex\u{2100}mple.com/",
        ]
        .map(str::to_owned)
        .to_vec(),
        regressions: include_str!("../../fuzz-regressions/netloc.jsonl"),
        check,
    });
}
