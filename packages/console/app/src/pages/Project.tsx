import { DeploymentsApi } from "@hostplane/api/deployments/DeploymentsApi"
import { HostnamesApi } from "@hostplane/api/hostnames/HostnamesApi"
import { ProjectsApi } from "@hostplane/api/projects/ProjectsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { commitOf, DeploymentTable, projectPath } from "../deploys.tsx"
import { enc, Link, navigate } from "../router.tsx"
import { DangerButton, Empty, ErrorNote, Loaded, time, useLoad, useRole } from "../ui.tsx"
import { HostnameRecords } from "./Hostnames.tsx"

const api = clientOf(ProjectsApi, DeploymentsApi, HostnamesApi)

export default function Project({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  const ref = { orgSlug: org, projectName: project }
  const { can } = useRole(org)
  const overview = useLoad(() => api().projects.overview({ params: ref }), [org, project], 5_000)
  const hostnames = useLoad(
    () => api().hostnames.list({ params: ref }),
    [org, project],
    (list) => (list?.items.some((h) => h.status !== "active") ? 2_000 : 10_000)
  )
  const [operation, setOperation] = useState<string | undefined>(undefined)
  const deletion = useLoad(
    () =>
      operation === undefined
        ? Promise.resolve(undefined)
        : api().projects.operation({ params: { orgSlug: org, opId: operation as never } }),
    [operation],
    operation === undefined ? undefined : 2_000
  )
  const base = projectPath(org, project)
  return (
    <>
      <h1>{project}</h1>
      <Loaded data={overview.data} problem={overview.problem}>
        {(data) => (
          <>
            <section class="card" aria-labelledby="live">
              <h2 id="live">Live deployment</h2>
              {data.serving === null ? (
                <Empty>
                  <p>Nothing is live yet. Deploy a folder with the CLI:</p>
                  <pre>
                    hostplane deploy ./site --org {org} --project {project}
                  </pre>
                </Empty>
              ) : (
                <dl class="facts">
                  <dt>Version</dt>
                  <dd>
                    v{data.serving.deployment.version} <span class="badge live">live</span>
                  </dd>
                  <dt>Since</dt>
                  <dd>{time(data.serving.deployment.createdAt)}</dd>
                  <dt>Deployed by</dt>
                  <dd>
                    {data.serving.uploader?.name ?? data.serving.uploader?.email ?? data.serving.deployment.uploadedBy}
                  </dd>
                  <dt>Commit</dt>
                  <dd>{commitOf(data.serving.deployment)}</dd>
                  <dt>URL</dt>
                  <dd>
                    <code>{data.project.hostname}</code>
                  </dd>
                </dl>
              )}
              <p>
                <Link href={`${base}/logs`}>Live logs</Link>
              </p>
            </section>
            <h2>Hostnames</h2>
            <Loaded data={hostnames.data} problem={hostnames.problem}>
              {(list) => <HostnameRecords items={list.items} />}
            </Loaded>
            <p>
              <Link href={`${base}/hostnames`}>Manage hostnames</Link>
            </p>
            <h2>Recent deployments</h2>
            {data.recentDeployments.length === 0 ? (
              <Empty>No deployment yet: the first `hostplane deploy` appears here.</Empty>
            ) : (
              <DeploymentTable
                org={org}
                project={project}
                items={data.recentDeployments}
                canRollback={can("member")}
                client={api}
                done={() => void overview.reload()}
              />
            )}
            <p>
              <Link href={`${base}/deployments`}>All deployments</Link>
            </p>
            {data.notifications.length > 0 && (
              <>
                <h2>Notices</h2>
                <ul>
                  {data.notifications.map((n) => (
                    <li key={n.id}>
                      {time(n.createdAt)} — {n.message}
                    </li>
                  ))}
                </ul>
              </>
            )}
            <h2>Delete this project</h2>
            {deletion.data !== undefined ? (
              <p role="status">
                Deleting: {deletion.data.phase}
                {deletion.data.terminalCode && <> ({deletion.data.terminalCode})</>}
                {deletion.data.phase === "done" && (
                  <>
                    {" "}
                    <Link href={`/orgs/${enc(org)}`}>Back to the projects</Link>
                  </>
                )}
              </p>
            ) : (
              <DangerButton
                label="Delete"
                title={`Delete the project ${project}?`}
                detail={<p>Its deployments, hostnames, secrets and add-on data go with it. This cannot be undone.</p>}
                disabled={!can("admin")}
                action={() =>
                  api()
                    .projects.remove({ params: ref, payload: { confirm: project } })
                    .then((started) => setOperation(started.operationId))
                }
                done={() => {
                  if (operation === undefined) navigate(`/orgs/${enc(org)}`)
                }}
              />
            )}
            <ErrorNote problem={deletion.problem} />
          </>
        )}
      </Loaded>
    </>
  )
}
