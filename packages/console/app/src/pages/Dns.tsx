import { DnsApi } from "@hostplane/api/dns/DnsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { enc, navigate } from "../router.tsx"
import { DangerButton, ErrorNote, Field, Loaded, Select, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(DnsApi)
const types = ["A", "AAAA", "CNAME", "MX", "TXT", "SRV", "CAA", "NS", "PTR"] as const

/** The rrset's name as the API's path takes it: relative to the zone, `@` for the apex. */
const relativeName = (name: string, zone: string) => {
  const bare = name.replace(/\.$/, "")
  return bare === zone ? "@" : bare.endsWith(`.${zone}`) ? bare.slice(0, -zone.length - 1) : bare
}

export default function Dns({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const zone = params["zone"]!
  const ref = { orgSlug: org, zone }
  const { can } = useRole(org)
  const detail = useLoad(() => api().dns.get({ params: ref }), [org, zone])
  const [name, setName] = useState("@")
  const [type, setType] = useState<string>("A")
  const [ttl, setTtl] = useState("300")
  const [records, setRecords] = useState("")
  const save = useAction()
  const dnssec = useAction()
  const [ds, setDs] = useState("")
  const putDs = useAction()
  return (
    <>
      <h1>DNS zone {zone}</h1>
      <Loaded data={detail.data} problem={detail.problem}>
        {(data) => (
          <>
            <p>
              Name servers: <code>{data.nameservers.join(" ")}</code> (serial {data.serial})
            </p>
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Type</th>
                  <th>TTL</th>
                  <th>Records</th>
                  <th>
                    <span class="muted">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.rrsets.map((rrset) => {
                  const relative = relativeName(rrset.name, zone)
                  return (
                    <tr key={`${rrset.name} ${rrset.type}`}>
                      <td>
                        <code>{relative}</code>
                      </td>
                      <td>{rrset.type}</td>
                      <td>{rrset.ttl}</td>
                      <td>
                        {rrset.records.map((record, i) => (
                          <div key={i}>
                            <code>{record}</code>
                          </div>
                        ))}
                      </td>
                      <td>
                        {rrset.managed_by === null ? (
                          <div class="row">
                            <button
                              type="button"
                              class="secondary"
                              disabled={!can("member")}
                              aria-label={`Edit ${relative} ${rrset.type}`}
                              onClick={() => {
                                setName(relative)
                                setType(rrset.type)
                                setTtl(String(rrset.ttl))
                                setRecords(rrset.records.join("\n"))
                              }}
                            >
                              Edit
                            </button>
                            <DangerButton
                              label="Delete"
                              title={`Delete ${relative} ${rrset.type}?`}
                              detail={<p>Its {rrset.records.length} record(s) stop answering within seconds.</p>}
                              disabled={!can("member")}
                              action={() =>
                                api().dns.removeRrset({ params: { ...ref, name: relative, type: rrset.type } })
                              }
                              done={() => void detail.reload()}
                            />
                          </div>
                        ) : (
                          <span class="muted">managed by {rrset.managed_by}</span>
                        )}
                      </td>
                    </tr>
                  )
                })}
              </tbody>
            </table>
            {can("member") && (
              <form
                class="card"
                onSubmit={(event) => {
                  event.preventDefault()
                  const list = records
                    .split("\n")
                    .map((line) => line.trim())
                    .filter((line) => line !== "")
                  void save
                    .run(() =>
                      api().dns.putRrset({
                        params: { ...ref, name: name.trim() === "" ? "@" : name.trim(), type },
                        payload: { records: list, ttl: Number(ttl) }
                      })
                    )
                    .then((saved) => saved !== undefined && void detail.reload())
                }}
              >
                <h2>Add or replace an rrset</h2>
                <div class="row">
                  <Field
                    label="Name"
                    name="rrset-name"
                    required
                    value={name}
                    onInput={(e) => setName(e.currentTarget.value)}
                  />
                  <Select label="Type" value={type} options={types} onChange={setType} />
                  <Field
                    label="TTL"
                    name="ttl"
                    type="number"
                    min={1}
                    required
                    value={ttl}
                    onInput={(e) => setTtl(e.currentTarget.value)}
                  />
                </div>
                <label class="field">
                  <span>Records</span>
                  <textarea
                    name="records"
                    required
                    value={records}
                    onInput={(e) => setRecords(e.currentTarget.value)}
                  />
                </label>
                <p class="muted">
                  One record per line, in zone-file form (`192.0.2.1`, `10 mail.example.com.`, `"v=spf1 -all"`).
                </p>
                <button type="submit" disabled={save.busy}>
                  Save
                </button>
                <ErrorNote problem={save.problem} />
              </form>
            )}
            <h2>DNSSEC</h2>
            <p>State: {data.dnssec}</p>
            {data.dnskeys && (
              <p>
                DNSKEY: <code>{data.dnskeys.join(" ")}</code>
              </p>
            )}
            {data.ds && (
              <p>
                DS to publish at the parent: <code>{data.ds.join(" ")}</code>
              </p>
            )}
            <button
              type="button"
              class="secondary"
              disabled={!can("admin") || dnssec.busy}
              onClick={() =>
                void dnssec
                  .run(() => api().dns.dnssec({ params: ref, payload: { enabled: data.dnssec === "off" } }))
                  .then((zoneNow) => zoneNow !== undefined && void detail.reload())
              }
            >
              {data.dnssec === "off" ? "Turn DNSSEC on" : "Turn DNSSEC off"}
            </button>
            <ErrorNote problem={dnssec.problem} />
            {data.dnssec !== "off" && can("admin") && (
              <form
                class="inline"
                onSubmit={(event) => {
                  event.preventDefault()
                  void putDs
                    .run(() =>
                      api().dns.putDs({ params: ref, payload: { ds: ds.split("\n").filter((l) => l.trim() !== "") } })
                    )
                    .then((zoneNow) => zoneNow !== undefined && void detail.reload())
                }}
              >
                <label class="field">
                  <span>DS records at the parent</span>
                  <textarea name="ds" value={ds} onInput={(e) => setDs(e.currentTarget.value)} />
                </label>
                <button type="submit" disabled={putDs.busy}>
                  Save
                </button>
                <ErrorNote problem={putDs.problem} />
              </form>
            )}
            <h2>Delete this zone</h2>
            <DangerButton
              label="Delete"
              title={`Delete the zone ${zone}?`}
              detail={<p>Every rrset of {zone} stops answering.</p>}
              disabled={!can("admin")}
              action={() => api().dns.remove({ params: ref })}
              done={() => navigate(`/orgs/${enc(org)}/domains`)}
            />
          </>
        )}
      </Loaded>
    </>
  )
}
