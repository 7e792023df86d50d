"""Summarize suite_live_ab.sh runs: configs timed, first timing, steady rate, start-up and the worker phases.

    python benchmarks/suite_live_ab_summary.py benchmarks/results/suite/ab-edd724f-fbf3ed0
"""
import json,glob,statistics,sys
for f in sorted(glob.glob(sys.argv[1]+"/*.json")):
    r=json.load(open(f)); recs=r["records"]; s=r["summary"]
    timed=[x for x in recs if x.get("ms") is not None and x.get("status") in ("better","slower","timed")]
    el=sorted(x["elapsed_s"] for x in timed if x.get("elapsed_s") is not None)
    first=el[0] if el else None
    rate=(len(el)-1)/(el[-1]-el[0]) if len(el)>1 else 0
    agg={}
    for x in timed:
        for k,v in (x.get("phase_seconds") or {}).items():
            if v is not None: agg.setdefault(k,[]).append(v)
    med={k:(round(statistics.median(v),3), round(sum(v),1)) for k,v in agg.items()}
    st=s.get("startup") or {}
    print(f.split("/")[-1][3:-5], "timed",len(el),"first",first,"last",el[-1] if el else None,"rate %.2f"%rate, "ready", st.get("workers_ready_s"), med)
