package refstore.interop;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

import org.eclipse.jgit.internal.storage.file.FileReftableDatabase;
import org.eclipse.jgit.internal.storage.file.FileRepository;
import org.eclipse.jgit.lib.BatchRefUpdate;
import org.eclipse.jgit.lib.NullProgressMonitor;
import org.eclipse.jgit.lib.ObjectId;
import org.eclipse.jgit.lib.PersonIdent;
import org.eclipse.jgit.lib.Ref;
import org.eclipse.jgit.lib.RefDatabase;
import org.eclipse.jgit.lib.RefUpdate;
import org.eclipse.jgit.lib.ReflogEntry;
import org.eclipse.jgit.lib.ReflogReader;
import org.eclipse.jgit.lib.Repository;
import org.eclipse.jgit.revwalk.RevWalk;
import org.eclipse.jgit.storage.file.FileRepositoryBuilder;
import org.eclipse.jgit.transport.ReceiveCommand;

/**
 * Reads and writes the refs of a repository through JGit, in a line format the
 * interop tests compare byte for byte with refstore's view of the same
 * repository.
 *
 * <pre>
 * dump GITDIR            every ref, sorted, then every reflog entry:
 *                          ref NAME OID [PEELED]      (PEELED only for annotated tags)
 *                          symref NAME TARGET
 *                          log NAME OLD NEW EPOCH TZMINUTES EMAIL NAME\tMESSAGE
 * apply GITDIR           reads commands from stdin and applies them as one atomic
 *                        batch: "update NAME NEW [OLD]", "delete NAME [OLD]",
 *                        "symref NAME TARGET"; optional "message TEXT" line first
 * convert GITDIR FORMAT  convertRefStorage to "reftable" or "files", keeping reflogs
 * compact GITDIR         full compaction of a reftable stack
 * tips GITDIR OID...     for each OID, the refs whose value or peeled value it is:
 *                          tip OID NAME               (sorted by name; through a
 *                                                     reftable's obj blocks when it has them)
 * </pre>
 */
public final class JGitRefs {
    private JGitRefs() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            usage();
        }
        File gitDir = new File(args[1]);
        try (Repository repo = new FileRepositoryBuilder().setGitDir(gitDir).setMustExist(true).build()) {
            switch (args[0]) {
                case "dump" -> dump(repo, System.out);
                case "apply" -> apply(repo);
                case "convert" -> {
                    if (args.length != 3) {
                        usage();
                    }
                    ((FileRepository) repo).convertRefStorage(args[2], true, false);
                }
                case "compact" -> {
                    RefDatabase db = repo.getRefDatabase();
                    if (!(db instanceof FileReftableDatabase reftable)) {
                        throw new IllegalStateException("not a reftable repository: " + gitDir);
                    }
                    reftable.compactFully();
                }
                case "tips" -> tips(repo, java.util.Arrays.copyOfRange(args, 2, args.length), System.out);
                default -> usage();
            }
        }
    }

    private static void tips(Repository repo, String[] ids, PrintStream out) throws Exception {
        for (String hex : ids) {
            TreeMap<String, Ref> sorted = new TreeMap<>();
            for (Ref ref : repo.getRefDatabase().getTipsWithSha1(ObjectId.fromString(hex))) {
                sorted.put(ref.getName(), ref);
            }
            for (String name : sorted.keySet()) {
                out.println("tip " + hex + " " + name);
            }
        }
        out.flush();
    }

    private static void usage() {
        System.err.println("usage: JGitRefs dump|apply|compact GITDIR | convert GITDIR reftable|files");
        System.exit(2);
    }

    private static void dump(Repository repo, PrintStream out) throws Exception {
        RefDatabase db = repo.getRefDatabase();
        TreeMap<String, Ref> sorted = new TreeMap<>();
        for (Ref ref : db.getRefs()) {
            sorted.put(ref.getName(), ref);
        }
        Ref head = db.exactRef("HEAD");
        if (head != null) {
            sorted.put("HEAD", head);
        }
        for (Ref ref : sorted.values()) {
            if (ref.isSymbolic()) {
                out.println("symref " + ref.getName() + " " + ref.getTarget().getName());
                continue;
            }
            Ref peeled = db.peel(ref);
            StringBuilder line = new StringBuilder("ref ").append(ref.getName()).append(' ')
                    .append(ObjectId.toString(ref.getObjectId()));
            if (peeled.getPeeledObjectId() != null) {
                line.append(' ').append(ObjectId.toString(peeled.getPeeledObjectId()));
            }
            out.println(line);
        }
        for (String name : sorted.keySet()) {
            ReflogReader reader = db.getReflogReader(name);
            if (reader == null) {
                continue;
            }
            List<ReflogEntry> entries = new ArrayList<>(reader.getReverseEntries());
            java.util.Collections.reverse(entries);
            for (ReflogEntry e : entries) {
                PersonIdent who = e.getWho();
                out.println("log " + name + " " + ObjectId.toString(e.getOldId()) + " "
                        + ObjectId.toString(e.getNewId()) + " " + who.getWhenAsInstant().getEpochSecond() + " "
                        + who.getZoneOffset().getTotalSeconds() / 60 + " " + who.getEmailAddress() + " "
                        + who.getName() + "\t" + e.getComment());
            }
        }
        out.flush();
    }

    private static void apply(Repository repo) throws Exception {
        RefDatabase db = repo.getRefDatabase();
        BatchRefUpdate batch = db.newBatchUpdate();
        batch.setAtomic(true);
        String message = "jgit";
        List<String[]> symrefs = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null;) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split(" ", -1);
            switch (f[0]) {
                case "message" -> message = line.substring("message ".length());
                case "update" -> {
                    ObjectId old = f.length > 3 ? ObjectId.fromString(f[3]) : ObjectId.zeroId();
                    ReceiveCommand.Type type = old.equals(ObjectId.zeroId())
                            ? ReceiveCommand.Type.CREATE : ReceiveCommand.Type.UPDATE;
                    batch.addCommand(new ReceiveCommand(old, ObjectId.fromString(f[2]), f[1], type));
                }
                case "delete" -> {
                    ObjectId old = f.length > 2 ? ObjectId.fromString(f[2]) : db.exactRef(f[1]).getObjectId();
                    batch.addCommand(new ReceiveCommand(old, ObjectId.zeroId(), f[1], ReceiveCommand.Type.DELETE));
                }
                case "symref" -> symrefs.add(new String[] {f[1], f[2]});
                default -> throw new IllegalArgumentException("unknown command: " + line);
            }
        }
        batch.setRefLogMessage(message, false);
        batch.setRefLogIdent(new PersonIdent(repo));
        if (!batch.getCommands().isEmpty()) {
            try (RevWalk walk = new RevWalk(repo)) {
                batch.execute(walk, NullProgressMonitor.INSTANCE);
            }
            for (ReceiveCommand cmd : batch.getCommands()) {
                if (cmd.getResult() != ReceiveCommand.Result.OK) {
                    System.err.println("rejected " + cmd.getRefName() + ": " + cmd.getResult() + " "
                            + cmd.getMessage());
                    System.exit(1);
                }
            }
        }
        for (String[] s : symrefs) {
            RefUpdate.Result r = db.newUpdate(s[0], false).link(s[1]);
            if (r != RefUpdate.Result.NEW && r != RefUpdate.Result.FORCED && r != RefUpdate.Result.NO_CHANGE) {
                System.err.println("rejected symref " + s[0] + ": " + r);
                System.exit(1);
            }
        }
    }
}
