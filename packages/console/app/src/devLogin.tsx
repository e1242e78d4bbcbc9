import { DevAuthApi } from "@hostplane/api/identity/IdentityApi"
import { useState } from "preact/hooks"
import { clientOf } from "./api.ts"
import { currentPath, navigate } from "./router.tsx"
import { saveSession } from "./session.ts"
import { ErrorNote, Field, forgetRoles, useAction } from "./ui.tsx"

const devAuth = clientOf(DevAuthApi)

/** The local dev login, offered only when the server says it is on; signs in and stays on the same page. */
export const DevLogin = () => {
  const [subject, setSubject] = useState("")
  const { busy, problem, run } = useAction()
  return (
    <form
      class="card"
      onSubmit={(event) => {
        event.preventDefault()
        void run(() => devAuth().devAuth.login({ payload: { subject } })).then((session) => {
          if (session !== undefined) {
            saveSession(session.body)
            forgetRoles()
            navigate(currentPath() + location.search, true)
          }
        })
      }}
    >
      <h2>Dev login</h2>
      <p class="muted">This server has the local dev login on: any subject signs in as that user.</p>
      <Field
        label="Subject"
        name="subject"
        required
        value={subject}
        onInput={(e) => setSubject(e.currentTarget.value)}
      />
      <button type="submit" disabled={busy}>
        Dev sign-in
      </button>
      <ErrorNote problem={problem} />
    </form>
  )
}
