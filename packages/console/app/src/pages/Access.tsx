import { AccessApi } from "@hostplane/api/access/AccessApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { DangerButton, ErrorNote, Facts, Field, Loaded, Select, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(AccessApi)
const modes = ["public", "org", "password"] as const

export default function Access({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const ref = { orgSlug: org, projectName: project }
  const { can } = useRole(org)
  const policy = useLoad(() => api().access.get({ params: ref }), [org, project])
  const [mode, setMode] = useState<string | undefined>(undefined)
  const [password, setPassword] = useState("")
  const save = useAction()
  const bypass = useAction()
  const [secret, setSecret] = useState<string | undefined>(undefined)
  return (
    <>
      <h1>Access</h1>
      <p class="muted">
        Who may open the project's site: anyone, members of {org} signed in, or whoever has the password.
      </p>
      <Loaded data={policy.data} problem={policy.problem}>
        {(data) => (
          <>
            <Facts value={data} />
            <form
              class="inline"
              onSubmit={(event) => {
                event.preventDefault()
                const chosen = (mode ?? data.mode) as (typeof modes)[number]
                void save
                  .run(() =>
                    api().access.set({
                      params: ref,
                      payload: password === "" ? { mode: chosen } : ({ mode: chosen, password } as never)
                    })
                  )
                  .then((saved) => {
                    if (saved !== undefined) {
                      setPassword("")
                      void policy.reload()
                    }
                  })
              }}
            >
              <Select
                label="Mode"
                value={mode ?? data.mode}
                options={modes}
                disabled={!can("admin")}
                onChange={setMode}
              />
              {(mode ?? data.mode) === "password" && (
                <Field
                  label="Password"
                  name="access-password"
                  type="password"
                  autocomplete="new-password"
                  disabled={!can("admin")}
                  value={password}
                  onInput={(e) => setPassword(e.currentTarget.value)}
                />
              )}
              <button type="submit" disabled={!can("admin") || save.busy}>
                Save
              </button>
            </form>
            <ErrorNote problem={save.problem} />
            <h2>Bypass secret</h2>
            <p class="muted">A secret that lets automation (previews, monitors) through whatever the mode is.</p>
            {secret !== undefined && (
              <p role="status">
                New bypass secret, shown once: <code>{secret}</code>
              </p>
            )}
            <div class="row">
              <button
                type="button"
                class="secondary"
                disabled={!can("admin") || bypass.busy}
                onClick={() =>
                  void bypass
                    .run(() => api().access.newBypass({ params: ref }))
                    .then((made) => {
                      if (made !== undefined) {
                        setSecret(made.body.secret)
                        void policy.reload()
                      }
                    })
                }
              >
                New bypass secret
              </button>
              {data.hasBypass && (
                <DangerButton
                  label="Revoke"
                  title="Revoke the bypass secret?"
                  detail={<p>Automation using it is refused at once.</p>}
                  disabled={!can("admin")}
                  action={() => api().access.revokeBypass({ params: ref })}
                  done={() => {
                    setSecret(undefined)
                    void policy.reload()
                  }}
                />
              )}
            </div>
            <ErrorNote problem={bypass.problem} />
          </>
        )}
      </Loaded>
    </>
  )
}
