// What the embedded metastore needs of an object store: folders that exist. The pyspark wheel's jars have no S3A
// (or GCS, ABFS) file system, and Hive's metastore checks -- and creates if missing -- the folder of every table
// and partition it records ("wh.isDir", "wh.mkdirs"); without a file system for the scheme it refuses the call.
// On an object store a folder is only a key prefix: it exists as soon as anyone says so, and S3A's mkdirs
// writes at most a marker. So, for the embedded metastore only, every path of these schemes is a folder, and
// nothing is ever read, written or deleted through it (the metastore reads no data; the handler talks to the
// store itself). A metastore users run has the real S3A connector on its class path instead.
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

public class ObjectStoreFolders extends FileSystem {
  private URI uri;
  private Path workingDir;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    uri = URI.create(name.getScheme() + "://" + (name.getAuthority() == null ? "" : name.getAuthority()));
    workingDir = new Path(uri.toString() + "/");
  }

  @Override
  public String getScheme() {
    return uri == null ? "s3a" : uri.getScheme();
  }

  @Override
  public URI getUri() {
    return uri;
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    throw new IOException("the embedded metastore reads no data (" + f + ")");
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    throw new IOException("the embedded metastore writes no data (" + f + ")");
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) throws IOException {
    throw new IOException("the embedded metastore writes no data (" + f + ")");
  }

  @Override
  public boolean rename(Path src, Path dst) {
    return false;
  }

  @Override
  public boolean delete(Path f, boolean recursive) {
    return false; // never deletes data: external tables keep theirs, and this is no real client of the store
  }

  @Override
  public FileStatus[] listStatus(Path f) throws FileNotFoundException {
    return new FileStatus[0];
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    workingDir = dir;
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDir;
  }

  @Override
  public boolean mkdirs(Path f, FsPermission permission) {
    return true;
  }

  @Override
  public FileStatus getFileStatus(Path f) {
    return new FileStatus(0, true, 1, 0, 0, makeQualified(f));
  }
}
