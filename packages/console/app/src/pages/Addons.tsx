import { AiAddonApi } from "@hostplane/api/ai/AiApi"
import { DatabaseApi } from "@hostplane/api/database/DatabaseApi"
import { EmailAddonApi } from "@hostplane/api/email/EmailApi"
import { AuthAddonApi } from "@hostplane/api/enduser/EndUserApi"
import { StorageApi } from "@hostplane/api/storage/StorageApi"
import { clientOf } from "../api.ts"
import { DangerButton, ErrorNote, Facts, Loaded, useAction, useLoad, useRole } from "../ui.tsx"

const api = clientOf(DatabaseApi, StorageApi, EmailAddonApi, AuthAddonApi, AiAddonApi)
type Ref = { readonly orgSlug: string; readonly projectName: string }
type AddonName = "database" | "storage" | "email" | "auth" | "ai"

interface AddonCalls {
  readonly status: (request: { params: Ref }) => Promise<object>
  readonly grant: (request: { params: Ref }) => Promise<object>
  readonly revoke?: (request: { params: Ref }) => Promise<void>
}

const addons: ReadonlyArray<{ readonly name: AddonName; readonly title: string; readonly what: string }> = [
  { name: "database", title: "Database", what: "A PostgreSQL-compatible database for the project, with backups." },
  { name: "storage", title: "Storage", what: "Object storage under the project's own prefix." },
  { name: "email", title: "Email", what: "An address the project sends and receives mail with." },
  { name: "auth", title: "Auth", what: "Sign-in for the project's own visitors." },
  { name: "ai", title: "AI", what: "Model calls billed to the org's AI credit." }
]

const Addon = (props: {
  readonly name: AddonName
  readonly title: string
  readonly what: string
  readonly ref_: Ref
  readonly canGrant: boolean
  readonly canRevoke: boolean
}) => {
  const calls = () => api()[props.name] as unknown as AddonCalls
  const status = useLoad(() => calls().status({ params: props.ref_ }), [props.ref_.orgSlug, props.ref_.projectName])
  const grant = useAction()
  return (
    <section class="card" aria-labelledby={`addon-${props.name}`}>
      <h2 id={`addon-${props.name}`}>{props.title}</h2>
      <p class="muted">{props.what}</p>
      <Loaded data={status.data} problem={status.problem}>
        {(data) => <Facts value={data} />}
      </Loaded>
      <div class="row">
        <button
          type="button"
          disabled={!props.canGrant || grant.busy}
          onClick={() =>
            void grant
              .run(() => calls().grant({ params: props.ref_ }))
              .then((done) => done !== undefined && void status.reload())
          }
        >
          Grant
        </button>
        {props.name !== "database" && (
          <DangerButton
            label="Revoke"
            title={`Revoke the ${props.title.toLowerCase()} add-on?`}
            detail={<p>The project's binding goes at the node's next convergence; stored data stays.</p>}
            disabled={!props.canRevoke}
            action={() => calls().revoke!({ params: props.ref_ })}
            done={() => void status.reload()}
          />
        )}
      </div>
      <ErrorNote problem={grant.problem} />
    </section>
  )
}

export default function Addons({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const { can } = useRole(org)
  const ref_ = { orgSlug: org, projectName: project }
  return (
    <>
      <h1>Add-ons</h1>
      {addons.map((addon) => (
        <Addon key={addon.name} {...addon} ref_={ref_} canGrant={can("member")} canRevoke={can("admin")} />
      ))}
    </>
  )
}
