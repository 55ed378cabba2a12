import csv,sys,re,collections
def load(f):
    rows=list(csv.reader(open(f)))
    hdr=rows[1]; data=[dict(zip(hdr,r)) for r in rows[2:] if len(r)==len(hdr)]
    return hdr,data
f=sys.argv[1]
hdr,data=load(f)
cols=[c for c in hdr if c.startswith('stall_') and 'Not Issued' not in c]
def num(x):
    try: return float(x)
    except: return 0.0
tot=collections.Counter()
byop=collections.defaultdict(collections.Counter)
for d in data:
    op=d['Source'].split()[0] if d['Source'] else ''
    if op.startswith('@'): op=d['Source'].split()[1]
    op=op.split('.')[0]
    for c in cols:
        v=num(d[c]); tot[c]+=v; byop[op][c]+=v
    byop[op]['n']+=1; byop[op]['exec']+=num(d['Instructions Executed'])
S=sum(tot.values())
print('total samples',S)
for c,v in tot.most_common(): 
    if v: print(f'{c:22s} {v/S*100:6.2f}%')
print()
for op,cn in sorted(byop.items(), key=lambda kv:-sum(v for k,v in kv[1].items() if k.startswith('stall'))):
    s=sum(v for k,v in cn.items() if k.startswith('stall'))
    if s/S<0.003: continue
    top=', '.join(f"{k[6:]}={v/S*100:.1f}" for k,v in cn.most_common() if k.startswith('stall') and v/S>0.002)
    print(f"{op:8s} n={cn['n']:5d} exec={cn['exec']:.3g} samples={s/S*100:5.1f}%  {top}")
