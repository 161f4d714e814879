"""Pages with the markup real documentation carries (Confluence-like HTML, Docusaurus MDX, Hugo), and a
helper that writes a knowledge-base folder of them."""

from pathlib import Path


def write_kb(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


HTML_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Wiki: Payment gateway on-call</title>
<script>var tracking = "noise that is not content";</script><style>body {color: red}</style></head>
<body><nav>Home / Space</nav>
<h1>Payment gateway on-call</h1>
<p>When the payment gateway returns HTTP 502, fail over to the standby acquirer with
<code>pgctl failover --to standby</code> and page the payments team.</p>
<h2>Escalation</h2>
<table><tr><th>Tier</th><th>Team</th></tr><tr><td>1</td><td>payments-oncall</td></tr></table>
</body></html>
"""

MDX_PAGE = """---
title: Installing the widget operator
sidebar_label: Widget operator
description: How to install the widget operator with Helm and verify it.
tags: [operator, widgets]
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
import DocCardList from '@theme/DocCardList';

export const meta = {
  owner: "platform",
};

<!-- TODO: screenshots -->

# Installing the widget operator

<Tabs>
<TabItem value="helm" label="Helm chart">

Install the widget operator with `helm install widgets ./widget-operator`.

</TabItem>
<TabItem value="kubectl" label="Plain manifests">

Apply the manifests with `kubectl apply -f widget-operator.yaml`.

</TabItem>
</Tabs>

:::warning[Cluster admin]
The widget operator needs cluster-admin rights to register its CRDs.
:::

```bash
export WIDGET_NAMESPACE=widgets
import_data --from '<Tabs>'
```

<DocCardList />
"""

HUGO_PAGE = """+++
title = "Rotating TLS certificates"
tags = ["tls", "certificates"]
+++

Certificates for the ingress expire every 90 days.

{{< note >}}
Rotate the ingress certificate a week before expiry, never on a Friday.
{{< /note >}}

{{% alert title="Danger" %}}
Deleting the issuer revokes every certificate it signed.
{{% /alert %}}
"""
