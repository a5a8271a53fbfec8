# plot.py OUT.svg LABEL=FILE.mem ... : RssAnon (MiB) over time, one line per server run
import sys
out=sys.argv[1]; runs=[]
for arg in sys.argv[2:]:
    label,path=arg.split('=',1); pts=[]
    for line in open(path):
        f=line.split()
        if len(f)>=3 and f[1]!='query' and f[1]!='exit':
            try: pts.append((float(f[0]), int(f[1])/1024))
            except ValueError: pass
    runs.append((label,pts))
W,H,L,R,T,B=720,360,70,700,40,310
xmax=max(p[0] for _,pts in runs for p in pts); ymax=max(p[1] for _,pts in runs for p in pts)
ystep=500; ytop=(int(ymax/ystep)+1)*ystep; xstep=10; xtop=(int(xmax/xstep)+1)*xstep
X=lambda x:L+(R-L)*x/xtop; Y=lambda y:B-(B-T)*y/ytop
o=[f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
   f'<rect width="{W}" height="{H}" fill="white"/>',
   f'<text x="{W/2}" y="20" text-anchor="middle" font-size="14">1M beliefs, server started without a sidecar: anonymous memory (RssAnon, MiB)</text>']
for y in range(0,ytop+1,ystep):
    o.append(f'<line x1="{L}" x2="{R}" y1="{Y(y):.1f}" y2="{Y(y):.1f}" stroke="#ddd"/><text x="{L-6}" y="{Y(y)+4:.1f}" text-anchor="end">{y}</text>')
for x in range(0,xtop+1,xstep):
    o.append(f'<text x="{X(x):.1f}" y="{B+16}" text-anchor="middle">{x}</text>')
o.append(f'<text x="{(L+R)/2}" y="{H-12}" text-anchor="middle">seconds since the server started (one question every 5 s)</text>')
colors=['#d62728','#1f77b4','#2ca02c']
for i,(label,pts) in enumerate(runs):
    d=' '.join(f'{X(x):.1f},{Y(y):.1f}' for x,y in pts)
    o.append(f'<polyline fill="none" stroke="{colors[i%3]}" stroke-width="2" points="{d}"/>')
    o.append(f'<rect x="{R-250}" y="{T+18*i}" width="12" height="12" fill="{colors[i%3]}"/><text x="{R-232}" y="{T+18*i+10}">{label}</text>')
o.append('</svg>')
open(out,'w').write('\n'.join(o)+'\n')
