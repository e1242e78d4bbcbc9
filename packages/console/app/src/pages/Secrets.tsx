import { SecretsApi } from "@hostplane/api/secrets/SecretsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { DangerButton, Empty, ErrorNote, Field, Loaded, time, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(SecretsApi)

export default function Secrets({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const ref = { orgSlug: org, projectName: project }
  const { role, can } = useRole(org)
  // Secret names are for members: a viewer is not asked for them (the API would answer 403).
  const list = useLoad(
    () => (role === undefined || role === "viewer" ? Promise.resolve(undefined) : api().secrets.list({ params: ref })),
    [org, project, role]
  )
  const [name, setName] = useState("")
  const [value, setValue] = useState("")
  const put = useAction()
  return (
    <>
      <h1>Secrets</h1>
      <p class="muted">Values are never shown again once saved; the next deployment sees the new value.</p>
      {role === "viewer" && <Empty>Secrets are visible to members and admins of {org}; your role is viewer.</Empty>}
      <Loaded data={role === "viewer" ? { items: [] } : list.data} problem={list.problem}>
        {(data) =>
          role === "viewer" ? null : data.items.length === 0 ? (
            <Empty>No secret yet: add one below, and read it in the app as an environment binding of that name.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Version</th>
                  <th>Updated</th>
                  <th>
                    <span class="muted">Action</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((secret) => (
                  <tr key={secret.name}>
                    <td>
                      <code>{secret.name}</code>
                    </td>
                    <td>{secret.version}</td>
                    <td>{time(secret.updatedAt)}</td>
                    <td>
                      <DangerButton
                        label="Delete"
                        title={`Delete the secret ${secret.name}?`}
                        detail={<p>The next deployment no longer sees {secret.name}.</p>}
                        disabled={!can("member")}
                        action={() => api().secrets.remove({ params: { ...ref, secretName: secret.name } })}
                        done={() => void list.reload()}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {can("member") && (
        <form
          class="inline"
          autocomplete="off"
          onSubmit={(event) => {
            event.preventDefault()
            void put
              .run(() => api().secrets.put({ params: { ...ref, secretName: name }, payload: { value } as never }))
              .then((saved) => {
                if (saved !== undefined) {
                  setName("")
                  setValue("")
                  void list.reload()
                }
              })
          }}
        >
          <Field
            label="Name"
            name="secret-name"
            required
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <Field
            label="Value"
            name="secret-value"
            type="password"
            required
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
          <button type="submit" disabled={put.busy}>
            Add secret
          </button>
        </form>
      )}
      <ErrorNote problem={put.problem} />
    </>
  )
}
