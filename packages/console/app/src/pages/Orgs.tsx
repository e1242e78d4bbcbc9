import { OrgsApi } from "@hostplane/api/orgs/OrgsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { enc, Link, navigate } from "../router.tsx"
import { Empty, ErrorNote, Field, forgetRoles, Loaded, useAction, useLoad } from "../ui.tsx"

const api = clientOf(OrgsApi)

export default function Orgs() {
  const { data, problem } = useLoad(() => api().orgs.list(), [])
  const [name, setName] = useState("")
  const create = useAction()
  return (
    <>
      <h1>Your orgs</h1>
      <Loaded data={data} problem={problem}>
        {(list) =>
          list.items.length === 0 ? (
            <Empty>You belong to no org yet: create one below, or accept an invitation someone sent you.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Slug</th>
                  <th>Role</th>
                  <th>Plan</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((org) => (
                  <tr key={org.slug}>
                    <td>
                      <Link href={`/orgs/${enc(org.slug)}`}>{org.name}</Link>
                      {org.personal && <span class="badge">personal</span>}
                    </td>
                    <td>
                      <code>{org.slug}</code>
                    </td>
                    <td>{org.role}</td>
                    <td>{org.plan}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      <h2>Create an org</h2>
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          void create
            .run(() => api().orgs.create({ payload: { name } }))
            .then((org) => {
              if (org !== undefined) {
                forgetRoles()
                navigate(`/orgs/${enc(org.slug)}`)
              }
            })
        }}
      >
        <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <button type="submit" disabled={create.busy}>
          Create org
        </button>
      </form>
      <ErrorNote problem={create.problem} />
    </>
  )
}
