import { LogsApi } from "@hostplane/api/logs/LogsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { Empty, Loaded, time, useLoad, useRole } from "../ui.tsx"

const api = clientOf(LogsApi)

const text = (values: ReadonlyArray<unknown>) =>
  values.map((value) => (typeof value === "string" ? value : JSON.stringify(value))).join(" ")

export default function Logs({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const { role } = useRole(org)
  const [live, setLive] = useState(true)
  // Runtime logs are for members: a viewer is not asked for them (the API would answer 403).
  const allowed = role !== undefined && role !== "viewer"
  const events = useLoad(
    () =>
      allowed
        ? api().logs.list({ params: { orgSlug: org, projectName: project }, query: {} })
        : Promise.resolve({ items: [], nextCursor: null }),
    [org, project, allowed],
    live && allowed ? 2_000 : undefined
  )
  return (
    <>
      <h1>Logs</h1>
      {role === "viewer" ? (
        <Empty>Runtime logs are visible to members and admins of {org}; your role is viewer.</Empty>
      ) : (
        <>
          <label class="row">
            <input type="checkbox" checked={live} onChange={(e) => setLive(e.currentTarget.checked)} />
            Live (new invocations appear every 2 seconds)
          </label>
          <Loaded data={events.data} problem={events.problem}>
            {(page) =>
              page.items.length === 0 ? (
                <Empty>
                  No runtime output yet: each request the project's worker (`main` in service.json) answers is listed
                  here with its console lines, within a second.
                </Empty>
              ) : (
                <table>
                  <thead>
                    <tr>
                      <th>When</th>
                      <th>Request</th>
                      <th>Outcome</th>
                      <th>Output</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.items.map((event) => (
                      <tr key={event.id}>
                        <td>{time(event.timestamp)}</td>
                        <td>
                          <code>
                            {event.request.method} {event.request.url}
                          </code>{" "}
                          {event.response && <span class="badge">{event.response.status}</span>}
                          <div class="muted">{event.durationMs} ms</div>
                        </td>
                        <td>{event.outcome}</td>
                        <td>
                          {event.logs.map((line, i) => (
                            <div key={i}>
                              <code>
                                [{line.level}] {text(line.message)}
                              </code>
                            </div>
                          ))}
                          {event.exceptions.map((exception, i) => (
                            <div key={`x${i}`} class="error">
                              <code>
                                {exception.name}: {exception.message}
                              </code>
                            </div>
                          ))}
                          {event.truncated && <div class="muted">(more output was dropped)</div>}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )
            }
          </Loaded>
        </>
      )}
    </>
  )
}
