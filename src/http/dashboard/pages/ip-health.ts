// The Delivery page's "Sending-IP health" table (operator only): the last check of each sending IP
// (services/ip-health.ts): reverse DNS and FCrDNS, blocklist listings, domains whose SPF misses it.
import type { IpHealth } from '../../../services/ip-health.js';
import { html, type Html } from '../html.js';
import { badge, tableWrap, time } from '../layout.js';

const listed = (h: IpHealth) => h.listings.filter((l) => l.listed);

export function ipHealthTable(ips: IpHealth[]): Html {
  if (ips.length === 0)
    return html`<p class="card" id="ip-health">No sending IP is configured (MTA_SENDING_IPS, MTA_IP_POOLS).</p>`;
  return tableWrap(
    'Sending-IP health',
    html`<table class="stack" id="ip-health">
      <caption>
        Sending-IP health: reverse DNS, blocklists and SPF, as last checked (mta ips check)
      </caption>
      <thead>
        <tr>
          <th scope="col">IP</th>
          <th scope="col">Pool</th>
          <th scope="col">State</th>
          <th scope="col">Reverse DNS</th>
          <th scope="col">Listed in</th>
          <th scope="col">SPF missing</th>
          <th scope="col">Checked</th>
        </tr>
      </thead>
      <tbody>
        ${ips.map(
          (h) =>
            html`<tr data-ip="${h.ip}">
              <td data-label="IP"><code>${h.ip}</code></td>
              <td data-label="Pool">${h.pool}</td>
              <td data-label="State">${badge(h.state)}</td>
              <td data-label="Reverse DNS">
                ${h.reverse_dns ?? html`<span class="muted">none</span>`}
                ${h.fcrdns === false ? html`<strong>(no FCrDNS)</strong>` : ''}
              </td>
              <td data-label="Listed in">
                ${
                  listed(h).length
                    ? listed(h).map((l) => html`<code>${l.zone}</code> (${l.answer}) `)
                    : html`<span class="muted">none</span>`
                }
              </td>
              <td data-label="SPF missing">
                ${h.spf_missing.length ? h.spf_missing.join(', ') : html`<span class="muted">none</span>`}
              </td>
              <td data-label="Checked">${time(h.checked_at)}</td>
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
}
