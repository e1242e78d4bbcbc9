import { HostnamesApi } from "@hostplane/api/hostnames/HostnamesApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { DangerButton, Empty, ErrorNote, Field, Loaded, time, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(HostnamesApi)

interface HostnameRow {
  readonly name: string
  readonly kind: string
  readonly status: string
  readonly verify: { readonly type: string; readonly name: string; readonly value: string } | null
  readonly cname: string
  readonly lastError: string | null
  readonly verifiedAt: string | null
  readonly tls: { readonly status: string; readonly expiresAt: string | null; readonly lastError: string | null }
}

const Status = ({ status }: { readonly status: string }) =>
  status === "active" ? <span class="badge live">active</span> : <span class="badge pending">waiting for DNS</span>

/** The name's certificate: what a visitor's browser gets, and the CA's answer when it refused. */
const Https = ({ tls }: { readonly tls: HostnameRow["tls"] }) => {
  switch (tls.status) {
    case "issued":
      return (
        <>
          <span class="badge live">https</span>{" "}
          {tls.expiresAt !== null && <span class="muted">certificate until {time(tls.expiresAt)}</span>}
        </>
      )
    case "pending":
      return <span class="badge pending">certificate pending</span>
    case "failed":
      return (
        <>
          <span class="badge failed">certificate failed</span>{" "}
          {tls.lastError !== null && <span class="error">{tls.lastError}</span>}
        </>
      )
    default:
      return <span class="muted">HTTP only</span>
  }
}

/** Each hostname with the exact record to create and what the last check saw. */
export const HostnameRecords = (props: {
  readonly items: ReadonlyArray<HostnameRow>
  readonly actions?: (hostname: HostnameRow) => preact.ComponentChildren
}) =>
  props.items.length === 0 ? (
    <Empty>No hostname yet.</Empty>
  ) : (
    <table>
      <thead>
        <tr>
          <th>Hostname</th>
          <th>Status</th>
          <th>HTTPS</th>
          <th>DNS records to create</th>
          <th>Last check</th>
          {props.actions && (
            <th>
              <span class="muted">Actions</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>
        {props.items.map((hostname) => (
          <tr key={hostname.name}>
            <td>
              <code>{hostname.name}</code> {hostname.kind === "default" && <span class="badge">default</span>}
            </td>
            <td>
              <Status status={hostname.status} />
            </td>
            <td>
              <Https tls={hostname.tls} />
            </td>
            <td>
              {hostname.verify === null ? (
                <span class="muted">none needed</span>
              ) : (
                <>
                  <div>
                    <code>
                      {hostname.verify.name} {hostname.verify.type} "{hostname.verify.value}"
                    </code>
                  </div>
                  <div>
                    <code>
                      {hostname.name} CNAME {hostname.cname}
                    </code>
                  </div>
                </>
              )}
            </td>
            <td>
              {hostname.lastError !== null ? (
                <span class="error">{hostname.lastError}</span>
              ) : hostname.verifiedAt !== null ? (
                <>verified {time(hostname.verifiedAt)}</>
              ) : (
                <span class="muted">not checked yet</span>
              )}
            </td>
            {props.actions && <td>{props.actions(hostname)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  )

const ActionButton = (props: {
  readonly label: string
  readonly run: () => Promise<unknown>
  readonly disabled: boolean
}) => {
  const action = useAction()
  return (
    <>
      <button
        type="button"
        class="secondary"
        disabled={props.disabled || action.busy}
        onClick={() => void action.run(props.run)}
      >
        {props.label}
      </button>
      <ErrorNote problem={action.problem} />
    </>
  )
}

export default function Hostnames({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const ref = { orgSlug: org, projectName: project }
  const { can } = useRole(org)
  const list = useLoad(
    () => api().hostnames.list({ params: ref }),
    [org, project],
    (data) => (data?.items.some((h) => h.status !== "active" || h.tls.status === "pending") ? 2_000 : 10_000)
  )
  const [name, setName] = useState("")
  const add = useAction()
  return (
    <>
      <h1>Hostnames</h1>
      <p class="muted">
        A custom hostname goes live once its TXT record is found; point it at the service with the CNAME shown.
      </p>
      <Loaded data={list.data} problem={list.problem}>
        {(data) => (
          <HostnameRecords
            items={data.items}
            actions={(hostname) =>
              (hostname.kind === "custom" || hostname.tls.status === "failed") && (
                <div class="row">
                  {hostname.tls.status === "failed" && (
                    <ActionButton
                      label="Retry certificate"
                      disabled={!can("member")}
                      run={() =>
                        api()
                          .hostnames.retryTls({ params: { ...ref, host: hostname.name } })
                          .finally(() => void list.reload())
                      }
                    />
                  )}
                  {hostname.kind === "custom" && (
                    <ActionButton
                      label="Verify"
                      disabled={!can("member")}
                      run={() =>
                        api()
                          .hostnames.verify({ params: { ...ref, host: hostname.name } })
                          .finally(() => void list.reload())
                      }
                    />
                  )}
                  {hostname.kind === "custom" && (
                    <DangerButton
                      label="Delete"
                      title={`Delete the hostname ${hostname.name}?`}
                      detail={<p>{hostname.name} stops serving this project at once.</p>}
                      disabled={!can("member")}
                      action={() => api().hostnames.remove({ params: { ...ref, host: hostname.name } })}
                      done={() => void list.reload()}
                    />
                  )}
                </div>
              )
            }
          />
        )}
      </Loaded>
      {can("member") && (
        <form
          class="inline"
          onSubmit={(event) => {
            event.preventDefault()
            void add
              .run(() => api().hostnames.add({ params: ref, payload: { name } }))
              .then((added) => {
                if (added !== undefined) {
                  setName("")
                  void list.reload()
                }
              })
          }}
        >
          <Field
            label="Name"
            name="hostname"
            required
            placeholder="www.example.com"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <button type="submit" disabled={add.busy}>
            Add hostname
          </button>
        </form>
      )}
      <ErrorNote problem={add.problem} />
    </>
  )
}
