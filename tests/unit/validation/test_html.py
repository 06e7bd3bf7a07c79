"""The self-contained HTML report of the gate (dpsyn/validation/html.py)."""

from __future__ import annotations

import re
import warnings

import pytest

from dpsyn.errors import InsecureRNGWarning
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.validation import validate

pytestmark = [
    pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha"),
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning"),
]


def _noise(seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRNGWarning)
        return NoiseSource(secure=False, seed=seed)


@pytest.fixture(scope="module")
def reports(adult_sample, adult_schema):
    good = validate(adult_sample, adult_sample.sample(frac=1.0, random_state=0), adult_schema,
                    accountant=PrivacyAccountant(epsilon=1, delta=1e-5), noise=_noise(),
                    counts=NoisyCounts.public(train=len(adult_sample)))
    bad_df = adult_sample.assign(age=adult_sample["age"] + 30)
    bad = validate(adult_sample, bad_df, adult_schema, accountant=PrivacyAccountant(epsilon=8, delta=1e-5),
                   noise=_noise(1), counts=NoisyCounts.public(train=len(adult_sample)))
    return good, bad


def test_passing_report_shows_the_verdict_and_a_plot_per_column(reports, adult_schema):
    good, _ = reports
    page = good.to_html(context={"run": "r1", "epsilon": 0.99})
    assert good.is_valid()
    assert re.search(r'id="verdict" class="verdict pass" data-verdict="pass">PASSED', page)
    cols = re.findall(r'<figure class="plot" data-column="([^"]+)">', page)
    assert cols == [c.name for c in adult_schema.synthesizable_columns()]
    assert page.count("<svg") == len(cols)
    assert "<td>r1</td>" in page and 'id="failed-checks"' not in page


def test_failing_report_names_each_failed_check_and_marks_its_plot(reports):
    _, bad = reports
    page = bad.to_html()
    assert 'data-verdict="fail"' in page and "nothing is published" in page
    listed = re.findall(r"<li><code>([^<]+)</code>", page)
    assert sorted(listed) == sorted(c.name for c in bad.failures()) and "gate:worst" in listed
    assert '<figure class="plot fail" data-column="age">' in page


def test_page_is_self_contained():
    """No external fetch: no src/href/url()/@import; the only URL is the SVG namespace."""
    from dpsyn.validation import ColumnHistogram, ValidationReport

    rep = ValidationReport(histograms=[ColumnHistogram(column="c", labels=["a", "b"], real=[0.5, 0.5],
                                                       synthetic=[0.4, 0.6], noise_std=0.01)])
    page = rep.to_html()
    assert not re.search(r"\b(src|href)\s*=|url\(|@import", page)
    assert set(re.findall(r"https?://[^\s\"']+", page)) == {"http://www.w3.org/2000/svg"}


def test_labels_are_escaped_and_long_domains_are_merged():
    from dpsyn.validation import ColumnHistogram, ValidationReport
    from dpsyn.validation.html import MAX_BARS

    labels = [f"<c{i}>" for i in range(100)]
    rep = ValidationReport(histograms=[ColumnHistogram(column="x<y", labels=labels, real=[0.01] * 100,
                                                       synthetic=[0.01] * 100, noise_std=0.001)])
    page = rep.to_html(title="<script>alert(1)</script>")
    assert "<script>" not in page and "&lt;script&gt;" in page and "<c1>" not in page
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert svg.count("<rect") == 2 * MAX_BARS and "other (71)" in svg
