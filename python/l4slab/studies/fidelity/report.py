"""The fidelity study's report section: each quantity of fidelity_published.csv beside the
simulated one, with its verdict (l4slab.fidelity.section)."""

from l4slab.fidelity import section

SECTIONS = (section,)
