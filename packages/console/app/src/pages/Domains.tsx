import { DnsApi } from "@hostplane/api/dns/DnsApi"
import { DomainsApi } from "@hostplane/api/domains/DomainsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { enc, Link, navigate } from "../router.tsx"
import { Empty, ErrorNote, Field, Loaded, time, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(DomainsApi, DnsApi)

export default function Domains({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const ref = { orgSlug: org }
  const { can } = useRole(org)
  const domains = useLoad(() => api().domains.list({ params: ref }), [org])
  const zones = useLoad(() => api().dns.list({ params: ref }), [org])
  const [zone, setZone] = useState("")
  const create = useAction()
  return (
    <>
      <h1>Domains and DNS</h1>
      <h2>Domains</h2>
      <Loaded data={domains.data} problem={domains.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No domain yet: buy or import one with `hostplane domains`, or host a zone's DNS below.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Status</th>
                  <th>Source</th>
                  <th>Expires</th>
                  <th>Auto-renew</th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((domain) => (
                  <tr key={domain.name}>
                    <td>
                      <code>{domain.name}</code>
                    </td>
                    <td>{domain.status}</td>
                    <td>{domain.source}</td>
                    <td>{time(domain.expiresAt)}</td>
                    <td>{domain.autoRenew ? "on" : "off"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      <h2>DNS zones</h2>
      <Loaded data={zones.data} problem={zones.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No zone yet: create one below, then delegate the domain to the name servers it shows.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Zone</th>
                  <th>DNSSEC</th>
                  <th>Name servers</th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((item) => (
                  <tr key={item.name}>
                    <td>
                      <Link href={`/orgs/${enc(org)}/dns/${enc(item.name)}`}>{item.name}</Link>
                    </td>
                    <td>{item.dnssec}</td>
                    <td>
                      <code>{item.nameservers.join(" ")}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {can("admin") && (
        <form
          class="inline"
          onSubmit={(event) => {
            event.preventDefault()
            void create
              .run(() => api().dns.create({ params: ref, payload: { name: zone } }))
              .then((created) => {
                if (created !== undefined) navigate(`/orgs/${enc(org)}/dns/${enc(created.name)}`)
              })
          }}
        >
          <Field
            label="Name"
            name="zone"
            required
            placeholder="example.com"
            value={zone}
            onInput={(e) => setZone(e.currentTarget.value)}
          />
          <button type="submit" disabled={create.busy}>
            Create zone
          </button>
        </form>
      )}
      <ErrorNote problem={create.problem} />
    </>
  )
}
