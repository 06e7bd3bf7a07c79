"""The HTML validation report rendered in headless Chromium: the verdict and every plot are on screen.

Debian's ``chromium`` is installed by .ci/run; elsewhere the test is skipped when it is missing (in CI,
where ``CI`` is set, a missing browser fails the test instead).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import warnings

import pytest

from dpsyn.errors import InsecureRNGWarning
from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.privacy.count import NoisyCounts
from dpsyn.validation import validate

pytestmark = [
    pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha"),
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning"),
]

# Appended to a copy of the page: measures what the browser laid out and writes it into the DOM.
PROBE = """<script>
(function(){
  function shown(el){const r=el.getBoundingClientRect(), s=getComputedStyle(el);
    return r.width>0 && r.height>0 && s.display!=="none" && s.visibility!=="hidden";}
  const v=document.getElementById("verdict");
  const figs=[...document.querySelectorAll("figure.plot")].map(f=>{
    const svg=f.querySelector("svg"); const bars=[...f.querySelectorAll("rect")].filter(r=>r.getBBox().height>0);
    return {column:f.dataset.column, shown:!!svg && shown(svg), bars:bars.length,
            width:svg?svg.getBoundingClientRect().width:0};});
  const out={verdict:v?{shown:shown(v), text:v.textContent, kind:v.dataset.verdict}:null, figures:figs};
  const pre=document.createElement("pre"); pre.id="probe"; pre.textContent=JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("headless Chromium is missing: .ci/run installs Debian's chromium (apt-get install chromium)")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return exe


def _render(exe: str, page: str, tmp_path) -> dict:
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", PROBE + "</body>"))
    proc = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000", "--dump-dom",
         path.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"chromium did not render the page (exit {proc.returncode}): {proc.stderr[-500:]}"
    import html

    return json.loads(html.unescape(m.group(1)))


def _noise(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRNGWarning)
        return NoiseSource(secure=False, seed=seed)


@pytest.mark.parametrize("corrupt", [False, True], ids=["pass", "fail"])
def test_browser_shows_verdict_and_every_plot(adult_sample, adult_schema, tmp_path, corrupt):
    exe = _chromium()
    synth = adult_sample.assign(age=adult_sample["age"] + 30) if corrupt else adult_sample.sample(frac=1, random_state=0)
    rep = validate(adult_sample, synth, adult_schema, accountant=PrivacyAccountant(epsilon=1, delta=1e-5),
                   noise=_noise(3), counts=NoisyCounts.public(train=len(adult_sample)))
    assert rep.is_valid() is not corrupt
    got = _render(exe, rep.to_html(), tmp_path)
    v = got["verdict"]
    assert v and v["shown"] and v["kind"] == ("fail" if corrupt else "pass")
    assert ("FAILED" if corrupt else "PASSED") in v["text"]
    figs = got["figures"]
    assert [f["column"] for f in figs] == [h.column for h in rep.histograms] and len(figs) == 15
    for f in figs:
        assert f["shown"] and f["width"] > 100, f
        assert f["bars"] >= 2, f  # at least one real and one synthetic bar drawn with height
