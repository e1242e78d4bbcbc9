import { AiCreditApi } from "@hostplane/api/ai/AiApi"
import { BillingApi } from "@hostplane/api/billing/BillingApi"
import { OrgsApi } from "@hostplane/api/orgs/OrgsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { navigate } from "../router.tsx"
import {
  DangerButton,
  Empty,
  ErrorNote,
  Facts,
  Field,
  forgetRoles,
  Loaded,
  time,
  useAction,
  useLoad,
  useRole
} from "../ui.tsx"

const api = clientOf(OrgsApi, BillingApi, AiCreditApi)

export default function Settings({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const ref = { orgSlug: org }
  const { can } = useRole(org)
  const orgs = useLoad(() => api().orgs.list(), [org])
  const current = orgs.data?.items.find((item) => item.slug === org)
  const billing = useLoad(() => api().billing.status({ params: ref }), [org])
  const credit = useLoad(() => api().aiCredit.credit({ params: ref }), [org])
  const ledger = useLoad(() => api().aiCredit.ledger({ params: ref, query: {} as never }), [org])
  const notifications = useLoad(() => api().orgs.notifications({ params: ref, query: {} }), [org])
  const [name, setName] = useState<string | undefined>(undefined)
  const rename = useAction()
  return (
    <>
      <h1>Settings</h1>
      <h2>Name</h2>
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          void rename
            .run(() => api().orgs.rename({ params: ref, payload: { name: name ?? current?.name ?? "" } }))
            .then((renamed) => renamed !== undefined && void orgs.reload())
        }}
      >
        <Field
          label="Name"
          name="org-name"
          required
          disabled={!can("admin")}
          value={name ?? current?.name ?? ""}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <button type="submit" disabled={!can("admin") || rename.busy}>
          Save
        </button>
      </form>
      <ErrorNote problem={rename.problem} />
      <h2>Billing</h2>
      <Loaded data={billing.data} problem={billing.problem}>
        {(data) => <Facts value={data} />}
      </Loaded>
      <h2>AI credit</h2>
      <Loaded data={credit.data} problem={credit.problem}>
        {(data) => <Facts value={data} />}
      </Loaded>
      <Loaded data={ledger.data} problem={ledger.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No AI usage or top-up yet: grant the AI add-on to a project and call it from the app.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>When</th>
                  <th>Entry</th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((entry, i) => (
                  <tr key={i}>
                    <td>{time((entry as { createdAt?: string }).createdAt)}</td>
                    <td>
                      <code>{JSON.stringify(entry)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      <h2>Notifications</h2>
      <Loaded data={notifications.data} problem={notifications.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No notification yet: the service writes here when something needs your attention.</Empty>
          ) : (
            <ul>
              {data.items.map((n) => (
                <li key={n.id}>
                  {time(n.createdAt)} — {n.message}
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <h2>Delete this org</h2>
      <DangerButton
        label="Delete"
        title={`Delete the org ${org}?`}
        detail={<p>Every project of {org} goes with it. This cannot be undone.</p>}
        disabled={!can("admin")}
        action={() => api().orgs.remove({ params: ref, payload: { confirm: org } })}
        done={() => {
          forgetRoles()
          navigate("/")
        }}
      />
    </>
  )
}
