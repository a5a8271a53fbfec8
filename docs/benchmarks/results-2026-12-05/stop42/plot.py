"""latency-vs-rate.svg: p50 and p99 against the offered rate, stop 41 against
stop 42, at 1M and 100k (benchmark serve-load results.json files). No
dependencies: the SVG is written by hand."""
import json, math, sys
out = sys.argv[1]
runs = [
    ("1M, stop 41", ["res/l1m-prs-b3e8", "res/l1mhi-prs-b3e8"], "#d62728", "6 3"),
    ("1M, stop 42", ["res/l1m-prs-cut", "res/l1mhi-prs-cut"], "#d62728", None),
    ("100k, stop 41", ["res/l100-prs-b3e8"], "#1f77b4", "6 3"),
    ("100k, stop 42", ["res/l100-prs-cut"], "#1f77b4", None),
]
W, H, L, R, T, B = 760, 480, 70, 200, 40, 50
xmin, xmax, ymin, ymax = 5, 200, 0.02, 2.0
def x(v): return L + (math.log10(v) - math.log10(xmin)) / (math.log10(xmax) - math.log10(xmin)) * (W - L - R)
def y(v): return H - B - (math.log10(v) - math.log10(ymin)) / (math.log10(ymax) - math.log10(ymin)) * (H - T - B)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       '<rect width="100%" height="100%" fill="white"/>',
       f'<text x="{L}" y="22" font-size="14">serve-load, AMD EPYC 2 cores: p50 (thin) and p99 (thick) against the offered rate; hollow = not sustained</text>']
for v in [5, 10, 20, 50, 100, 200]:
    svg.append(f'<line x1="{x(v):.1f}" y1="{T}" x2="{x(v):.1f}" y2="{H-B}" stroke="#ddd"/><text x="{x(v):.1f}" y="{H-B+16}" text-anchor="middle">{v}</text>')
for v in [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]:
    svg.append(f'<line x1="{L}" y1="{y(v):.1f}" x2="{W-R}" y2="{y(v):.1f}" stroke="#ddd"/><text x="{L-6}" y="{y(v)+4:.1f}" text-anchor="end">{int(v*1000)} ms</text>')
svg.append(f'<text x="{(L+W-R)/2}" y="{H-12}" text-anchor="middle">offered rate (questions a second)</text>')
svg.append(f'<text x="16" y="{H/2}" transform="rotate(-90 16 {H/2})" text-anchor="middle">latency from the scheduled send</text>')
for n, (label, dirs, colour, dash) in enumerate(runs):
    steps = []
    for d in dirs:
        steps += json.load(open(d + "/results.json"))["steps"]
    steps.sort(key=lambda s: s["rate"])
    for key, width in (("p50", 1.2), ("p99", 2.6)):
        pts = " ".join(f'{x(s["rate"]):.1f},{y(s[key]):.1f}' for s in steps)
        da = f' stroke-dasharray="{dash}"' if dash else ''
        svg.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="{width}"{da}/>')
        for s in steps:
            ok = s["ok"] == s["sent"] and s["throughput"] >= 0.9 * s["rate"]
            fill = colour if ok else "white"
            svg.append(f'<circle cx="{x(s["rate"]):.1f}" cy="{y(s[key]):.1f}" r="3" fill="{fill}" stroke="{colour}"/>')
    ly = T + 20 + n * 20
    da = f' stroke-dasharray="{dash}"' if dash else ''
    svg.append(f'<line x1="{W-R+15}" y1="{ly}" x2="{W-R+45}" y2="{ly}" stroke="{colour}" stroke-width="2.6"{da}/><text x="{W-R+52}" y="{ly+4}">{label}</text>')
svg.append('</svg>')
open(out, "w").write("\n".join(svg) + "\n")
