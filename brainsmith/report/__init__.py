"""A build's report: report.json's contents and types, report.html, its charts and picture."""
