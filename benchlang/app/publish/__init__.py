"""Publishing an experiment and replicating a stranger's: ``bundle`` packs a spec, its store and
the plugins' versions into one archive, signed (``signing``); ``replicate`` reads a bundle within
bounds (``bundle_archive``), shows what it would run and read before the user consents
(``consent``), reruns it, under bubblewrap if asked (``sandbox``), and judges the rerun against
the published store (docs/replicate.md)."""
