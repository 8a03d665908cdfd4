// #/skills and #/skills/:id — skills (vendor and custom), each skill's versions and their files
// (download links), and a zip upload (POST /v1/skills/upload, multipart) with a progress bar:
// a new skill from the list, a new version from a skill's screen.
import { useState } from 'react';
import { upload } from '../api';
import {
  ErrorText,
  Loaded,
  PagedList,
  href,
  useCanWrite,
  useGet,
  usePaged,
  useRefresh,
  when,
} from '../ui';

type Skill = {
  id: string;
  display_title: string;
  description: string;
  source: string;
  latest_version: string;
  updated_at: string;
};
type Version = {
  id: string;
  version: string;
  name: string;
  files: Array<{ filename: string; size_bytes: number }>;
  created_at: string;
};

export function Skills() {
  const q = usePaged<Skill>('/v1/skills');
  const canWrite = useCanWrite();
  return (
    <section>
      <h1>Skills</h1>
      <PagedList
        q={q}
        label="Skills"
        keyOf={(s) => s.id}
        emptyText="No skills yet."
        row={(s) => (
          <>
            <a href={href('skills', s.id)}>{s.display_title}</a> <code>{s.id}</code> · {s.source} ·
            latest {s.latest_version}
            <br />
            <small>{s.description}</small>
          </>
        )}
      />
      {canWrite && <ZipUpload />}
    </section>
  );
}

export function SkillDetail({ id }: { id: string }) {
  const path = `/v1/skills/${encodeURIComponent(id)}`;
  const skill = useGet<Skill>(path);
  const versions = usePaged<Version>(`${path}/versions`);
  const canWrite = useCanWrite();
  return (
    <section>
      <p>
        <a href="#/skills">← Skills</a>
      </p>
      <h1>Skill {skill.data?.display_title ?? id}</h1>
      <Loaded q={skill}>
        <p>
          <code>{skill.data?.id}</code> · {skill.data?.source} · {skill.data?.description}
        </p>
      </Loaded>
      <h2>Versions</h2>
      <PagedList
        q={versions}
        label="Skill versions"
        keyOf={(v) => v.version}
        emptyText="No versions."
        row={(v) => (
          <>
            <strong>{v.version}</strong> · {v.name} · {when(v.created_at)} ·{' '}
            <a href={`${path}/versions/${encodeURIComponent(v.version)}/content`} download>
              Download zip of {v.version}
            </a>
            <ul aria-label={`Files of version ${v.version}`}>
              {v.files.map((f) => (
                <li key={f.filename}>
                  <a
                    href={`${path}/files/${f.filename.split('/').map(encodeURIComponent).join('/')}?version=${encodeURIComponent(v.version)}`}
                    download
                  >
                    {f.filename}
                  </a>{' '}
                  ({f.size_bytes} bytes)
                </li>
              ))}
            </ul>
          </>
        )}
      />
      {canWrite && skill.data?.source === 'custom' && <ZipUpload skillId={id} />}
    </section>
  );
}

/** A zip (a SKILL.md at its root or in one folder) as a new skill, or a new version of one. */
function ZipUpload({ skillId }: { skillId?: string }) {
  const refresh = useRefresh();
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState('');
  const [done, setDone] = useState('');
  const submit = async (e: React.FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const body = new FormData();
    const title = data.get('display_title');
    if (skillId) body.set('id', skillId);
    else if (typeof title === 'string' && title) body.set('display_title', title);
    body.set('file', data.get('file') as File);
    setError('');
    setDone('');
    setProgress(0);
    try {
      const s = await upload<Skill>('/v1/skills/upload', body, setProgress);
      setDone(`Uploaded ${s.display_title}: version ${s.latest_version}.`);
      form.reset();
      await refresh('/v1/skills');
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setProgress(null);
    }
  };
  const label = skillId ? 'Upload a new version (zip)' : 'Upload a skill (zip)';
  return (
    <form className="card" aria-label={label} onSubmit={submit}>
      <h2>{label}</h2>
      {!skillId && (
        <label>
          Display title (optional)
          <input name="display_title" autoComplete="off" />
        </label>
      )}
      <label>
        Zip file
        <input name="file" type="file" accept=".zip,application/zip" required />
      </label>
      <button type="submit" disabled={progress !== null}>
        Upload
      </button>
      {progress !== null && (
        <progress aria-label="Upload progress" max={1} value={progress}>
          {Math.round(progress * 100)}%
        </progress>
      )}
      {done && <p role="status">{done}</p>}
      <ErrorText error={error} />
    </form>
  );
}
